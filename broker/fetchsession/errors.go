package fetchsession

import "github.com/twmb/franz-go/pkg/kerr"

var (
	errSessionNotFound = kerr.FetchSessionIDNotFound.Code
	errInvalidEpoch    = kerr.InvalidFetchSessionEpoch.Code
	errTopicIDs        = kerr.FetchSessionTopicIDError.Code
)
