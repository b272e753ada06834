package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker/sasl"
	"github.com/brokerd/brokerd/raftstore"
)

// Kafka's ScramMechanism type codes in the SCRAM admin APIs.
const (
	scramTypeSHA256 int8 = 1
	scramTypeSHA512 int8 = 2
)

func scramMechanismName(t int8) string {
	switch t {
	case scramTypeSHA256:
		return raftstore.ScramSHA256
	case scramTypeSHA512:
		return raftstore.ScramSHA512
	}
	return ""
}

func scramMechanismType(name string) int8 {
	switch name {
	case raftstore.ScramSHA256:
		return scramTypeSHA256
	case raftstore.ScramSHA512:
		return scramTypeSHA512
	}
	return 0
}

// describeUserScram answers DescribeUserScramCredentials (API 50) from
// this node's applied state: every user when none is named.
func (b *Broker) describeUserScram(r *kmsg.DescribeUserSCRAMCredentialsRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeUserSCRAMCredentialsResponse()
	byUser := map[string][]kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}
	var users []string
	for _, c := range b.store.ScramCredentials() {
		if _, ok := byUser[c.User]; !ok {
			users = append(users, c.User)
		}
		info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
		info.Mechanism, info.Iterations = scramMechanismType(c.Mechanism), c.Iterations
		byUser[c.User] = append(byUser[c.User], info)
	}
	if len(r.Users) > 0 {
		users = users[:0]
		seen := map[string]int{}
		for _, u := range r.Users {
			seen[u.Name]++
			if seen[u.Name] == 1 {
				users = append(users, u.Name)
			}
		}
		for _, u := range users {
			res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			res.User = u
			switch {
			case seen[u] > 1:
				res.ErrorCode = kerr.DuplicateResource.Code
				res.ErrorMessage = strPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + u)
			case len(byUser[u]) == 0:
				res.ErrorCode = kerr.ResourceNotFound.Code
				res.ErrorMessage = strPtr("Attempt to describe a user credential that does not exist: " + u)
			default:
				res.CredentialInfos = byUser[u]
			}
			resp.Results = append(resp.Results, res)
		}
		return resp
	}
	for _, u := range users {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User, res.CredentialInfos = u, byUser[u]
		resp.Results = append(resp.Results, res)
	}
	return resp
}

func strPtr(s string) *string { return &s }

// alterUserScram answers AlterUserScramCredentials (API 51) on the raft
// leader (Kafka's controller): a user named twice in the request gets
// DUPLICATE_RESOURCE, each other change its own result.
func (b *Broker) alterUserScram(ctx context.Context, r *kmsg.AlterUserSCRAMCredentialsRequest) kmsg.Response {
	if !b.store.IsLeader() {
		return scramNotController(r)
	}
	resp := kmsg.NewPtrAlterUserSCRAMCredentialsResponse()
	count := map[string]int{}
	for _, d := range r.Deletions {
		count[d.Name]++
	}
	for _, u := range r.Upsertions {
		count[u.Name]++
	}
	result := func(user string, err error) {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = user
		if err != nil {
			res.ErrorCode = scramErrorCode(err)
			res.ErrorMessage = errorMessage(err)
		}
		resp.Results = append(resp.Results, res)
	}
	var dels []raftstore.ScramKey
	var ups []raftstore.ScramCredential
	var delUsers, upUsers []string
	reported := map[string]bool{}
	for _, d := range r.Deletions {
		switch {
		case count[d.Name] > 1:
			if !reported[d.Name] {
				reported[d.Name] = true
				result(d.Name, fmt.Errorf("%w: a user credential cannot be altered twice in the same request", kerr.DuplicateResource))
			}
		default:
			dels = append(dels, raftstore.ScramKey{User: d.Name, Mechanism: scramMechanismName(d.Mechanism)})
			delUsers = append(delUsers, d.Name)
		}
	}
	for _, u := range r.Upsertions {
		if count[u.Name] > 1 {
			if !reported[u.Name] {
				reported[u.Name] = true
				result(u.Name, fmt.Errorf("%w: a user credential cannot be altered twice in the same request", kerr.DuplicateResource))
			}
			continue
		}
		c, err := upsertion(u)
		if err != nil {
			result(u.Name, err)
			continue
		}
		ups = append(ups, c)
		upUsers = append(upUsers, u.Name)
	}
	if err := b.store.CheckScramRoom(ups); err != nil {
		// Refused here with a clear error; apply would refuse them too.
		for _, u := range upUsers {
			result(u, err)
		}
		ups, upUsers = nil, nil
	}
	if len(dels)+len(ups) == 0 {
		return resp
	}
	errs, err := b.store.AlterScram(ctx, ups, dels, false)
	if err == nil && len(errs) != len(ups)+len(dels) {
		err = fmt.Errorf("%w: %d results for %d changes", raftstore.ErrInvalidCommand, len(errs), len(ups)+len(dels))
	}
	for i, u := range upUsers {
		if err != nil {
			result(u, err)
		} else {
			result(u, errs[i])
		}
	}
	for i, u := range delUsers {
		if err != nil {
			result(u, err)
		} else {
			result(u, errs[len(ups)+i])
		}
	}
	if err == nil {
		b.logger.Info("SCRAM credentials altered", "upserted", upUsers, "deleted", delUsers)
	}
	return resp
}

// scramNotController answers a whole AlterUserScramCredentials on a node
// that is not the raft leader as Kafka's KafkaApis does on a broker that
// is not the controller, before validating anything: NOT_CONTROLLER for
// each distinct user, sorted (AlterUserScramCredentialsRequest.
// getErrorResponse). franz-go retries the request elsewhere only when
// the first result is NOT_CONTROLLER.
func scramNotController(r *kmsg.AlterUserSCRAMCredentialsRequest) kmsg.Response {
	resp := kmsg.NewPtrAlterUserSCRAMCredentialsResponse()
	var users []string
	for _, d := range r.Deletions {
		users = append(users, d.Name)
	}
	for _, u := range r.Upsertions {
		users = append(users, u.Name)
	}
	slices.Sort(users)
	msg := kerr.NotController.Message
	for _, u := range slices.Compact(users) {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User, res.ErrorCode, res.ErrorMessage = u, kerr.NotController.Code, &msg
		resp.Results = append(resp.Results, res)
	}
	return resp
}

// upsertion turns a request's upsertion into a stored credential: the
// keys are derived from the salted password, which is not kept.
func upsertion(u kmsg.AlterUserSCRAMCredentialsRequestUpsertion) (raftstore.ScramCredential, error) {
	mech := scramMechanismName(u.Mechanism)
	c := raftstore.ScramCredential{User: u.Name, Mechanism: mech, Salt: slices.Clone(u.Salt), Iterations: u.Iterations}
	if mech == "" {
		return c, fmt.Errorf("%w: mechanism type %d", raftstore.ErrUnsupportedScramMechanism, u.Mechanism)
	}
	stored, server, err := sasl.KeysFromSaltedPassword(mech, u.SaltedPassword)
	if err != nil {
		return c, fmt.Errorf("%w: %w", raftstore.ErrUnacceptableCredential, err)
	}
	c.StoredKey, c.ServerKey = stored, server
	if err := raftstore.CheckScramCredential(&c); err != nil {
		return c, err
	}
	return c, nil
}

// scramErrorCode maps a SCRAM change's error to Kafka's code.
func scramErrorCode(err error) int16 {
	switch {
	case errors.Is(err, raftstore.ErrUnknownScramCredential):
		return kerr.ResourceNotFound.Code
	case errors.Is(err, raftstore.ErrUnsupportedScramMechanism):
		return kerr.UnsupportedSaslMechanism.Code
	case errors.Is(err, raftstore.ErrUnacceptableCredential), errors.Is(err, raftstore.ErrScramLimit):
		return kerr.UnacceptableCredential.Code
	case errors.Is(err, raftstore.ErrNotLeader):
		return kerr.NotController.Code
	}
	return errorCode(err)
}
