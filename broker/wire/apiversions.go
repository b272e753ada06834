package wire

import "github.com/twmb/franz-go/pkg/kmsg"

// errUnsupportedVersionCode is Kafka's UNSUPPORTED_VERSION error code.
const errUnsupportedVersionCode int16 = 35

// unsupportedApiVersions builds the KIP-511 answer to an ApiVersions request
// at a version above what the broker supports: a v0 response carrying
// UNSUPPORTED_VERSION and only ApiVersions' own range, so that the client
// retries at the highest version both sides know.
func unsupportedApiVersions(minV, maxV int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = errUnsupportedVersionCode
	key := kmsg.NewApiVersionsResponseApiKey()
	key.ApiKey = apiKeyApiVersions
	key.MinVersion = minV
	key.MaxVersion = maxV
	resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{key}
	return resp
}
