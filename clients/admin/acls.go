package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ACLSpec describes ACLs as rpk's flags do: every (allow or deny)
// principal, with its hosts, gets every operation on every resource named.
// For a filter (ListACLs, DeleteACLs) what is left empty matches anything.
type ACLSpec struct {
	AllowPrincipals  []string
	DenyPrincipals   []string
	AllowHosts       []string
	DenyHosts        []string
	Operations       []string // read, write, all, describe_configs, ...
	Topics           []string
	Groups           []string
	TransactionalIDs []string
	Cluster          bool
	// PatternType is literal, prefixed, match or any (filters only);
	// empty is literal for a create and any for a filter.
	PatternType string
}

// ACL is one binding as listed or deleted.
type ACL struct {
	ResourceType string `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	PatternType  string `json:"pattern_type"`
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    string `json:"operation"`
	Permission   string `json:"permission"`
}

// ErrBadACLSpec is a spec that names no resource, principal or operation
// where one is needed, or an unknown operation or pattern type.
var ErrBadACLSpec = errors.New("invalid ACL spec")

// builder turns a spec into kadm's ACL builder.
func (s ACLSpec) builder(filter bool) (*kadm.ACLBuilder, error) {
	b := kadm.NewACLs()
	pattern := s.PatternType
	if pattern == "" {
		pattern = "literal"
		if filter {
			pattern = "any"
		}
	}
	pt, err := kmsg.ParseACLResourcePatternType(pattern)
	if err != nil {
		return nil, fmt.Errorf("%w: pattern type %q: %w", ErrBadACLSpec, pattern, err)
	}
	b.ResourcePatternType(pt)
	ops, err := s.operations()
	if err != nil {
		return nil, err
	}
	if filter {
		if len(ops) == 0 {
			ops = []kadm.ACLOperation{kadm.OpAny}
		}
		b.MaybeTopics(s.Topics...).MaybeGroups(s.Groups...).MaybeTransactionalIDs(s.TransactionalIDs...).MaybeClusters(s.Cluster)
		if len(s.Topics) == 0 && len(s.Groups) == 0 && len(s.TransactionalIDs) == 0 && !s.Cluster {
			b.AnyResource()
		}
		if len(s.AllowPrincipals) == 0 && len(s.DenyPrincipals) == 0 {
			b.Allow().Deny()
		} else {
			b.MaybeAllow(s.AllowPrincipals...).MaybeDeny(s.DenyPrincipals...)
		}
		if len(s.AllowHosts) == 0 && len(s.DenyHosts) == 0 {
			b.AllowHosts().DenyHosts()
		} else {
			b.MaybeAllowHosts(s.AllowHosts...).MaybeDenyHosts(s.DenyHosts...)
		}
		b.Operations(ops...)
		return b, nil
	}
	b.MaybeTopics(s.Topics...).MaybeGroups(s.Groups...).MaybeTransactionalIDs(s.TransactionalIDs...).MaybeClusters(s.Cluster)
	b.MaybeAllow(s.AllowPrincipals...).MaybeDeny(s.DenyPrincipals...)
	b.MaybeAllowHosts(s.AllowHosts...).MaybeDenyHosts(s.DenyHosts...)
	b.Operations(ops...)
	if err := b.ValidateCreate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadACLSpec, err)
	}
	return b, nil
}

// operations parses the spec's operations (Kafka's names, any case, with
// _ or - between words).
func (s ACLSpec) operations() ([]kadm.ACLOperation, error) {
	var ops []kadm.ACLOperation
	for _, o := range s.Operations {
		op, err := kmsg.ParseACLOperation(strings.ReplaceAll(strings.ToLower(o), "-", "_"))
		if err != nil {
			return nil, fmt.Errorf("%w: operation %q: %w", ErrBadACLSpec, o, err)
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// resources are the spec's resources, (type, name) pairs.
func (s ACLSpec) resources() [][2]any {
	var out [][2]any
	for _, n := range s.Topics {
		out = append(out, [2]any{kmsg.ACLResourceTypeTopic, n})
	}
	for _, n := range s.Groups {
		out = append(out, [2]any{kmsg.ACLResourceTypeGroup, n})
	}
	for _, n := range s.TransactionalIDs {
		out = append(out, [2]any{kmsg.ACLResourceTypeTransactionalId, n})
	}
	if s.Cluster {
		out = append(out, [2]any{kmsg.ACLResourceTypeCluster, "kafka-cluster"})
	}
	return out
}

// entry is one principal and host with a permission.
type entry struct {
	principal, host string
	perm            kmsg.ACLPermissionType
}

// entries pairs each allowed and denied principal with each of its hosts
// (every host, *, when none is given).
func (s ACLSpec) entries() []entry {
	var out []entry
	add := func(principals, hosts []string, perm kmsg.ACLPermissionType) {
		if len(hosts) == 0 {
			hosts = []string{"*"}
		}
		for _, p := range principals {
			for _, h := range hosts {
				out = append(out, entry{p, h, perm})
			}
		}
	}
	add(s.AllowPrincipals, s.AllowHosts, kmsg.ACLPermissionTypeAllow)
	add(s.DenyPrincipals, s.DenyHosts, kmsg.ACLPermissionTypeDeny)
	return out
}

// CreateACLs creates the ACLs a spec describes (every resource, principal
// and host, operation) and returns them. The spec is checked with kadm's
// builder; the request goes to the controller, the raft leader, which
// alone changes ACLs (kadm would send it to any broker, and another node
// answers NOT_CONTROLLER).
func (c *Client) CreateACLs(ctx context.Context, s ACLSpec) ([]ACL, error) {
	if _, err := s.builder(false); err != nil {
		return nil, err
	}
	ops, _ := s.operations()
	pt, _ := kmsg.ParseACLResourcePatternType(cmpOr(s.PatternType, "literal"))
	req := kmsg.NewPtrCreateACLsRequest()
	var want []ACL
	for _, r := range s.resources() {
		for _, e := range s.entries() {
			for _, op := range ops {
				cr := kmsg.NewCreateACLsRequestCreation()
				cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = r[0].(kmsg.ACLResourceType), r[1].(string), pt
				cr.Principal, cr.Host, cr.Operation, cr.PermissionType = e.principal, e.host, op, e.perm
				req.Creations = append(req.Creations, cr)
				want = append(want, ACL{ResourceType: cr.ResourceType.String(), ResourceName: cr.ResourceName, PatternType: pt.String(),
					Principal: e.principal, Host: e.host, Operation: op.String(), Permission: e.perm.String()})
			}
		}
	}
	resp, err := c.toController(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("create ACLs: %w", err)
	}
	for i, r := range resp.(*kmsg.CreateACLsResponse).Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil && i < len(want) {
			return nil, fmt.Errorf("create ACL %+v: %w%s", want[i], err, errMessage(deref(r.ErrorMessage)))
		}
	}
	return want, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ListACLs lists the ACLs a spec, read as a filter, matches.
func (c *Client) ListACLs(ctx context.Context, s ACLSpec) ([]ACL, error) {
	b, err := s.builder(true)
	if err != nil {
		return nil, err
	}
	res, err := c.adm.DescribeACLs(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("list ACLs: %w", err)
	}
	var out []ACL
	seen := map[ACL]bool{}
	for _, r := range res {
		if r.Err != nil {
			return nil, fmt.Errorf("list ACLs: %w%s", r.Err, errMessage(r.ErrMessage))
		}
		for _, d := range r.Described {
			a := ACL{ResourceType: d.Type.String(), ResourceName: d.Name, PatternType: d.Pattern.String(),
				Principal: d.Principal, Host: d.Host, Operation: d.Operation.String(), Permission: d.Permission.String()}
			if !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	return out, nil
}

// DeleteACLs deletes the ACLs a spec, read as a filter, matches, and
// returns them. The request goes to the controller (see CreateACLs).
func (c *Client) DeleteACLs(ctx context.Context, s ACLSpec) ([]ACL, error) {
	if _, err := s.builder(true); err != nil {
		return nil, err
	}
	ops, _ := s.operations()
	if len(ops) == 0 {
		ops = []kadm.ACLOperation{kmsg.ACLOperationAny}
	}
	pt, _ := kmsg.ParseACLResourcePatternType(cmpOr(s.PatternType, "any"))
	type res struct {
		typ  kmsg.ACLResourceType
		name *string
	}
	var rs []res
	for _, r := range s.resources() {
		name := r[1].(string)
		rs = append(rs, res{r[0].(kmsg.ACLResourceType), &name})
	}
	if len(rs) == 0 {
		rs = []res{{kmsg.ACLResourceTypeAny, nil}}
	}
	type who struct {
		principal, host *string
		perm            kmsg.ACLPermissionType
	}
	var ws []who
	for _, e := range s.entries() {
		p, h := e.principal, e.host
		w := who{principal: &p, perm: e.perm}
		if h != "*" || len(s.AllowHosts)+len(s.DenyHosts) > 0 {
			w.host = &h
		}
		ws = append(ws, w)
	}
	if len(ws) == 0 {
		ws = []who{{perm: kmsg.ACLPermissionTypeAny}}
	}
	req := kmsg.NewPtrDeleteACLsRequest()
	for _, r := range rs {
		for _, w := range ws {
			for _, op := range ops {
				f := kmsg.NewDeleteACLsRequestFilter()
				f.ResourceType, f.ResourceName, f.ResourcePatternType = r.typ, r.name, pt
				f.Principal, f.Host, f.Operation, f.PermissionType = w.principal, w.host, op, w.perm
				req.Filters = append(req.Filters, f)
			}
		}
	}
	resp, err := c.toController(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("delete ACLs: %w", err)
	}
	var out []ACL
	seen := map[ACL]bool{}
	for _, r := range resp.(*kmsg.DeleteACLsResponse).Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return out, fmt.Errorf("delete ACLs: %w%s", err, errMessage(deref(r.ErrorMessage)))
		}
		for _, m := range r.MatchingACLs {
			a := ACL{ResourceType: m.ResourceType.String(), ResourceName: m.ResourceName, PatternType: m.ResourcePatternType.String(),
				Principal: m.Principal, Host: m.Host, Operation: m.Operation.String(), Permission: m.PermissionType.String()}
			if !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	return out, nil
}

func errMessage(m string) string {
	if m == "" {
		return ""
	}
	return ": " + m
}

// toController sends a request to the controller (the raft leader).
func (c *Client) toController(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	m, err := c.adm.BrokerMetadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("find the controller: %w", err)
	}
	if m.Controller < 0 {
		return nil, fmt.Errorf("find the controller: %w", kerr.NotController)
	}
	return c.cl.Broker(int(m.Controller)).Request(ctx, req)
}
