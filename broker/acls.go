package broker

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/raftstore"
	"github.com/brokerd/brokerd/raftstore/acl"
)

// CreateAcls, DescribeAcls and DeleteAcls. With the authorizer off they
// answer SECURITY_DISABLED, as Kafka does without an authorizer. Changes
// are raft commands, so only the leader makes them; another node answers
// NOT_CONTROLLER (retriable: the leader is Metadata's controller).
// DescribeAcls reads the node's replicated state.

func securityDisabled() *string {
	s := "no authorizer is configured (brokerd.authorizer.enabled=false)"
	return &s
}

// canonicalHostFilter writes a filter's host as bindings hold it
// (acl.CanonicalHost), so that ::1 finds 0:0:0:0:0:0:0:1.
func canonicalHostFilter(h *string) *string {
	if h == nil {
		return nil
	}
	c := acl.CanonicalHost(*h)
	return &c
}

// aclWriteCode maps a store error of an ACL change to its code.
func aclWriteCode(err error) (int16, *string) {
	switch {
	case errors.Is(err, raftstore.ErrNotLeader):
		msg := "this node is not the raft leader; send ACL changes to the controller"
		return kerr.NotController.Code, &msg
	case errors.Is(err, acl.ErrInvalid), errors.Is(err, acl.ErrTooMany), errors.Is(err, acl.ErrTooLarge):
		return kerr.InvalidRequest.Code, errorMessage(err)
	}
	return errorCode(err), errorMessage(err)
}

func (b *Broker) createACLs(ctx context.Context, r *kmsg.CreateACLsRequest) kmsg.Response {
	resp := kmsg.NewPtrCreateACLsResponse()
	result := func(code int16, msg *string) {
		for range r.Creations {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode, res.ErrorMessage = code, msg
			resp.Results = append(resp.Results, res)
		}
	}
	if !b.cfg.Authorizer.Enabled {
		result(kerr.SecurityDisabled.Code, securityDisabled())
		return resp
	}
	if len(r.Creations) > acl.MaxPerCommand {
		msg := fmt.Sprintf("%d ACLs in one request (at most %d)", len(r.Creations), acl.MaxPerCommand)
		result(kerr.InvalidRequest.Code, &msg)
		return resp
	}
	bindings := make([]acl.Binding, len(r.Creations))
	for i, c := range r.Creations {
		pt := acl.PatternType(c.ResourcePatternType)
		if r.Version == 0 {
			pt = acl.PatternLiteral
		}
		bindings[i] = acl.Binding{
			ResourceType: acl.ResourceType(c.ResourceType), ResourceName: c.ResourceName, PatternType: pt,
			Principal: c.Principal, Host: acl.CanonicalHost(c.Host), Operation: acl.Operation(c.Operation), Permission: acl.Permission(c.PermissionType),
		}
	}
	errs, err := b.store.CreateACLs(ctx, bindings)
	if err != nil {
		result(aclWriteCode(err))
		return resp
	}
	for i := range bindings {
		res := kmsg.NewCreateACLsResponseResult()
		if e := errs[i]; e != nil {
			res.ErrorCode, res.ErrorMessage = aclWriteCode(e)
		} else {
			b.logger.Info("created ACL", "binding", fmt.Sprintf("%+v", bindings[i]))
		}
		resp.Results = append(resp.Results, res)
	}
	return resp
}

func (b *Broker) describeACLs(r *kmsg.DescribeACLsRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeACLsResponse()
	if !b.cfg.Authorizer.Enabled {
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, securityDisabled()
		return resp
	}
	f := acl.Filter{
		ResourceType: acl.ResourceType(r.ResourceType), ResourceName: r.ResourceName, PatternType: acl.PatternType(r.ResourcePatternType),
		Principal: r.Principal, Host: canonicalHostFilter(r.Host), Operation: acl.Operation(r.Operation), Permission: acl.Permission(r.PermissionType),
	}
	if r.Version == 0 {
		f.PatternType = acl.PatternLiteral
	}
	if err := f.Validate(); err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, errorMessage(err)
		return resp
	}
	byRes := map[[3]string]*kmsg.DescribeACLsResponseResource{}
	for _, bd := range b.store.ACLs().Bindings(f) {
		k := [3]string{string(rune(bd.ResourceType)), bd.ResourceName, string(rune(bd.PatternType))}
		res := byRes[k]
		if res == nil {
			v := kmsg.NewDescribeACLsResponseResource()
			v.ResourceType, v.ResourceName, v.ResourcePatternType = kmsg.ACLResourceType(bd.ResourceType), bd.ResourceName, kmsg.ACLResourcePatternType(bd.PatternType)
			res = &v
			byRes[k] = res
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host, a.Operation, a.PermissionType = bd.Principal, bd.Host, kmsg.ACLOperation(bd.Operation), kmsg.ACLPermissionType(bd.Permission)
		res.ACLs = append(res.ACLs, a)
	}
	keys := make([][3]string, 0, len(byRes))
	for k := range byRes {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		return a[0] < b[0] || a[0] == b[0] && (a[1] < b[1] || a[1] == b[1] && a[2] < b[2])
	})
	for _, k := range keys {
		resp.Resources = append(resp.Resources, *byRes[k])
	}
	return resp
}

func (b *Broker) deleteACLs(ctx context.Context, r *kmsg.DeleteACLsRequest) kmsg.Response {
	resp := kmsg.NewPtrDeleteACLsResponse()
	result := func(code int16, msg *string) {
		for range r.Filters {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode, res.ErrorMessage = code, msg
			resp.Results = append(resp.Results, res)
		}
	}
	if !b.cfg.Authorizer.Enabled {
		result(kerr.SecurityDisabled.Code, securityDisabled())
		return resp
	}
	if len(r.Filters) > acl.MaxPerCommand {
		msg := fmt.Sprintf("%d filters in one request (at most %d)", len(r.Filters), acl.MaxPerCommand)
		result(kerr.InvalidRequest.Code, &msg)
		return resp
	}
	filters := make([]acl.Filter, len(r.Filters))
	for i, f := range r.Filters {
		pt := acl.PatternType(f.ResourcePatternType)
		if r.Version == 0 {
			pt = acl.PatternLiteral
		}
		filters[i] = acl.Filter{
			ResourceType: acl.ResourceType(f.ResourceType), ResourceName: f.ResourceName, PatternType: pt,
			Principal: f.Principal, Host: canonicalHostFilter(f.Host), Operation: acl.Operation(f.Operation), Permission: acl.Permission(f.PermissionType),
		}
	}
	out, err := b.store.DeleteACLs(ctx, filters)
	if err != nil {
		result(aclWriteCode(err))
		return resp
	}
	for i := range filters {
		res := kmsg.NewDeleteACLsResponseResult()
		if e := out.Errs[i]; e != nil {
			res.ErrorCode, res.ErrorMessage = aclWriteCode(e)
		}
		for _, bd := range out.Deleted[i] {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = kmsg.ACLResourceType(bd.ResourceType), bd.ResourceName, kmsg.ACLResourcePatternType(bd.PatternType)
			m.Principal, m.Host = bd.Principal, bd.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(bd.Operation), kmsg.ACLPermissionType(bd.Permission)
			res.MatchingACLs = append(res.MatchingACLs, m)
		}
		if n := len(out.Deleted[i]); n > 0 {
			b.logger.Info("deleted ACLs", "count", n)
		}
		resp.Results = append(resp.Results, res)
	}
	return resp
}

// authCreateACLs: Alter on Cluster, or every creation is refused.
func authCreateACLs(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	r := msg.(*kmsg.CreateACLsRequest)
	if a.cluster(acl.OpAlter) {
		return nil, nil
	}
	resp := kmsg.NewPtrCreateACLsResponse()
	for range r.Creations {
		res := kmsg.NewCreateACLsResponseResult()
		res.ErrorCode = clusterDenied
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

// authDescribeACLs: Describe on Cluster.
func authDescribeACLs(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	if a.cluster(acl.OpDescribe) {
		return nil, nil
	}
	resp := kmsg.NewPtrDescribeACLsResponse()
	resp.ErrorCode = clusterDenied
	return resp, nil
}

// authDeleteACLs: Alter on Cluster, or every filter is refused.
func authDeleteACLs(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	r := msg.(*kmsg.DeleteACLsRequest)
	if a.cluster(acl.OpAlter) {
		return nil, nil
	}
	resp := kmsg.NewPtrDeleteACLsResponse()
	for range r.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		res.ErrorCode = clusterDenied
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
