package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/provider"
)

// A confined sandbox's gateway is a pod of its own beside the sandbox's
// (provider.GatewayLinks, docs/egress.md): made from a Spec whose Link
// names the two, with a NetworkPolicy that lets in only its sandbox
// (on the link's ports) and lets out only what is beyond the cluster. The
// sandbox's pod, made once the gateway has an address, names it
// litterbox-gateway in /etc/hosts and resolves names with it, and its
// policy lets it reach the gateway's ports and nothing else.

var _ provider.GatewayLinks = (*Provider)(nil)

// GatewayHost is the name a linked sandbox finds its gateway by.
func (p *Provider) GatewayHost() string { return gatewayHost }

// claimDir is where a gateway pod mounts a downwardAPI volume of its own
// with one file, claimItem: its annotationClaimed, which a claim sets
// (Claim) and the kubelet writes there once it sees the change (within
// 0.2 s on the test cluster; at the latest its sync period, a minute by
// default). The sandbox's pod mounts no such volume.
const (
	claimDir  = "/run/litterbox-claim"
	claimItem = "sandbox"
)

// GatewayNameFile is the gateway pod's claimItem, as the kubelet keeps
// it: claimDir/claimItem is a link to ..data/claimItem, ..data a link to
// the directory of the latest write, so the file itself is read through
// ..data (the reader follows no link at the last step).
func (p *Provider) GatewayNameFile() string { return claimDir + "/..data/" + claimItem }

// Endpoint names the cluster: its apiserver and context.
func (p *Provider) Endpoint() string { return p.endpoint() }

// nodeList is what is read of the cluster's nodes, and of its
// ServiceCIDRs listed with them (their spec.cidrs; a node has none, a
// ServiceCIDR no address or pod range).
type nodeList struct {
	Items []struct {
		Spec struct {
			PodCIDR  string   `json:"podCIDR"`
			PodCIDRs []string `json:"podCIDRs"`
			CIDRs    []string `json:"cidrs"`
		} `json:"spec"`
		Status struct {
			Addresses []struct{ Type, Address string } `json:"addresses"`
		} `json:"status"`
	} `json:"items"`
}

// nodes lists the cluster's nodes and ServiceCIDRs. Asks made while one
// runs share it (the engine host's addresses and its ranges are asked for
// together: one kubectl, not two); one made after it ended lists them
// again.
func (p *Provider) nodes(ctx context.Context) (*nodeList, error) {
	p.nodesMu.Lock()
	if f := p.nodesAsk; f != nil {
		p.nodesMu.Unlock()
		<-f.done
		return f.n, f.err
	}
	f := &nodesAsk{done: make(chan struct{})}
	p.nodesAsk = f
	p.nodesMu.Unlock()
	f.n, f.err = p.listNodes(ctx)
	p.nodesMu.Lock()
	p.nodesAsk = nil
	p.nodesMu.Unlock()
	close(f.done)
	return f.n, f.err
}

// nodesAsk is a listing of the nodes under way, and once done what it
// found.
type nodesAsk struct {
	done chan struct{}
	n    *nodeList
	err  error
}

// listNodes is one kubectl that lists the nodes and the ServiceCIDRs
// (each kubectl is a process start, and a pooled claim whose kept probe
// of the cluster is old waits for this one). A cluster that serves no
// ServiceCIDRs (before Kubernetes 1.33), or a user not allowed to list
// them, fails that call: the nodes are then listed alone, and the ranges
// are their pod ranges (the gateway's refusal of private ranges covers
// the usual service ranges).
func (p *Provider) listNodes(ctx context.Context) (*nodeList, error) {
	res, err := p.run(ctx, p.Cmd("get", "nodes,servicecidrs", "-o", "json"))
	if err != nil {
		res, err = p.run(ctx, p.Cmd("get", "nodes", "-o", "json"))
	}
	if err != nil {
		return nil, fmt.Errorf("list the cluster's nodes: %w", err)
	}
	var n nodeList
	if err := json.Unmarshal(res.Stdout, &n); err != nil {
		return nil, fmt.Errorf("parse the cluster's nodes: %w", err)
	}
	return &n, nil
}

// HostAddrs are the nodes' addresses (InternalIP, ExternalIP): what a
// gateway refuses unless the user lists one. image is not used: the
// apiserver knows them.
func (p *Provider) HostAddrs(ctx context.Context, _ string) ([]string, error) {
	n, err := p.nodes(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, it := range n.Items {
		for _, a := range it.Status.Addresses {
			if _, err := netip.ParseAddr(a.Address); err == nil && (a.Type == "InternalIP" || a.Type == "ExternalIP") && !slices.Contains(out, a.Address) {
				out = append(out, a.Address)
			}
		}
	}
	return out, nil
}

// Subnets are the cluster's pod ranges (the nodes' podCIDRs) and service
// ranges (its ServiceCIDRs, Kubernetes 1.33 and later, listed with the
// nodes; a cluster without them names none, and the gateway's refusal of
// private ranges covers the usual ones).
func (p *Provider) Subnets(ctx context.Context) ([]string, error) {
	n, err := p.nodes(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	add := func(c string) {
		if pf, err := netip.ParsePrefix(strings.TrimSpace(c)); err == nil && !slices.Contains(out, pf.Masked().String()) {
			out = append(out, pf.Masked().String())
		}
	}
	for _, it := range n.Items {
		add(it.Spec.PodCIDR)
		for _, c := range slices.Concat(it.Spec.PodCIDRs, it.Spec.CIDRs) {
			add(c)
		}
	}
	return out, nil
}

// linkOf is what a linked Spec's pod and policy need: for a sandbox, its
// gateway pod's address (gatewayIP); for a gateway, the
// cluster's ranges, which its policy closes.
func (p *Provider) linkOf(ctx context.Context, s provider.Spec) (gatewayIP string, closed []string, err error) {
	if isGateway(s) {
		if len(s.Link.Closed) > 0 {
			return "", s.Link.Closed, nil
		}
		closed, err = p.Subnets(ctx)
		return "", closed, err
	}
	ip, err := p.gatewayIP(ctx, s.Link.Gateway)
	if err != nil {
		return "", nil, fmt.Errorf("find its egress gateway %s: %w", s.Link.Gateway, err)
	}
	return ip, nil, nil
}

// gatewayIP waits until gateway pod name has an address: it may not
// exist yet, since the sandbox's pod is made beside it (the sandbox's
// start needs only its address, which the pod has once its node made its
// network). One watch of the pod (watchPod) sees it made and given its
// address; a pod of the name being deleted is an earlier gateway's, whose
// address is not the new one's. It gives up when ctx is done (the
// gateway's create failed), the pod cannot start, or after 3 minutes.
func (p *Provider) gatewayIP(ctx context.Context, name string) (string, error) {
	return p.gatewayIPWithin(ctx, name, 3*time.Minute)
}

// gatewayIPWithin is gatewayIP giving up after limit.
func (p *Provider) gatewayIPWithin(ctx context.Context, name string, limit time.Duration) (string, error) {
	var ip string
	err := p.watchPod(ctx, name, limit, func(pod *podObject) (bool, error) {
		switch {
		case pod.Metadata.DeletionTimestamp != nil:
			// An earlier gateway of the name, going: its address is
			// not the new one's.
			return false, nil
		case pod.Status.PodIP != "":
			ip = pod.Status.PodIP
			return true, nil
		}
		if why := pod.failure(); why != "" {
			return false, fmt.Errorf("pod %s cannot start: %s", name, why)
		}
		return false, nil
	})
	if errors.Is(err, errWatchTimeout) {
		return "", fmt.Errorf("pod %s has no address after %.0f minutes (see `%s`)", name, limit.Minutes(), p.Cmd("describe", "pod", name))
	}
	return ip, err
}
