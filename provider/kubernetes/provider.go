package kubernetes

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
)

// annotationPod, on a paused sandbox's ConfigMap, is the pod to make again
// at resume.
const annotationPod = "dev.litterbox.k8s-pod"

// Info asks the apiserver for its version, and, beside it, for the id of
// namespace kube-system, which is the Instance: a new cluster has a new one.
func (p *Provider) Info(ctx context.Context) (provider.Info, error) {
	info := provider.Info{Engine: Engine, Endpoint: p.endpoint(), Pause: true}
	var (
		uid    runner.Result
		uidErr error
		wg     sync.WaitGroup
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		uid, uidErr = p.run(ctx, p.Cmd("get", "namespace", "kube-system", "-o", "jsonpath={.metadata.uid}"))
	}()
	go func() {
		defer wg.Done()
		// The runtimes a Spec can name: the cluster's RuntimeClasses
		// (none said when they cannot be listed). A pod without one gets
		// the nodes' default, which the cluster does not name.
		res, err := p.run(ctx, p.Cmd("get", "runtimeclass", "-o", "jsonpath={.items[*].metadata.name}"))
		if err == nil {
			info.Runtimes = strings.Fields(string(res.Stdout))
			sort.Strings(info.Runtimes)
		}
	}()
	res, err := p.run(ctx, p.Cmd("version", "-o", "json"))
	wg.Wait()
	if err != nil {
		return info, err
	}
	var v struct {
		ServerVersion struct{ GitVersion, Platform string }
	}
	if err := json.Unmarshal(res.Stdout, &v); err != nil {
		return info, fmt.Errorf("parse kubectl version %q: %w", res.Stdout, err)
	}
	info.Version = v.ServerVersion.GitVersion
	info.OS, info.Arch, _ = strings.Cut(v.ServerVersion.Platform, "/")
	if uidErr == nil {
		info.Instance = "kube-system/" + strings.TrimSpace(string(uid.Stdout))
	}
	return info, nil
}

// Create makes the sandbox's NetworkPolicy, then its pod, in one kubectl
// call, and waits for the pod to be ready. Each call runs to its end whatever ctx says; what was made
// is removed again when a step fails, or when ctx was cancelled meanwhile.
func (p *Provider) Create(ctx context.Context, s provider.Spec) (*provider.Sandbox, error) {
	if s.Network == provider.NetworkNone {
		return nil, provider.Errorf(provider.ErrUnsupported, "create %s: a pod always has a network, so network \"none\" cannot be kept on Kubernetes: leave the network isolated", s.Name)
	}
	if len(s.Volumes) > 0 || len(s.Binds) > 0 {
		// The egress gateway's topology on Docker and Podman (a sandbox
		// without a network, and a volume shared with its gateway) is
		// not a cluster's: there the two are linked by NetworkPolicy
		// (s.Link, gateway.go; docs/egress.md).
		return nil, provider.Errorf(provider.ErrUnsupported, "create %s: volumes and host directories of a sandbox are not kept on Kubernetes", s.Name)
	}
	// A pod with its policy is a sandbox's own network already: isolated
	// and own are one on a cluster.
	if s.Network != provider.NetworkIsolated && s.Network != provider.NetworkOwn {
		return nil, fmt.Errorf("create %s: network %q is not %q", s.Name, s.Network, provider.NetworkIsolated)
	}
	// A long-lived process that makes pods (a warm pool's refill) starts
	// its claims' proxy now, so that its first claim goes through it too.
	p.claimProxy()
	var gatewayIP string
	var closed []string
	if s.Link != nil {
		var err error
		if gatewayIP, closed, err = p.linkOf(ctx, s); err != nil {
			return nil, fmt.Errorf("create %s: %w", s.Name, err)
		}
	}
	pod, err := podManifest(s, gatewayIP)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", s.Name, err)
	}
	policy, err := policyManifest(s, closed)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", s.Name, err)
	}
	if s.Runtime != "" {
		// The apiserver would refuse the pod only after the policy was
		// made.
		_, handler, err := p.runtimeClass(ctx, s.Runtime)
		if err != nil {
			return nil, fmt.Errorf("create %s: %w", s.Name, err)
		}
		if err := portsUnder(handler, s); err != nil {
			return nil, err
		}
	}
	mk := context.WithoutCancel(ctx)
	var made provider.Made
	undo := func(cause error) error { return made.Undo(mk, cause) }
	// One call makes both: kubectl creates a List's items in order, the
	// policy first, and prints the name of each it made, which is what a
	// failure removes (a name taken is not this create's).
	list, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": []json.RawMessage{policy, pod}})
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", s.Name, err)
	}
	res, err := p.run(mk, p.Cmd("create", "-f", "-", "-o", "name").WithStdin(bytes.NewReader(list)))
	for _, obj := range strings.Fields(string(res.Stdout)) {
		made.Add(func(ctx context.Context) (string, error) { return obj, p.deleteObjects(ctx, obj) })
	}
	switch {
	case errors.Is(err, provider.ErrConflict):
		return nil, undo(provider.Errorf(provider.ErrConflict, "network policy or pod %s exists already: %w", s.Name, err))
	case err != nil:
		// It may have made them without saying so (kubectl was stopped).
		made = provider.Made{func(ctx context.Context) (string, error) {
			return "network policy and pod " + s.Name, p.deleteObjects(ctx, "networkpolicy/"+s.Name, "pod/"+s.Name)
		}}
		return nil, undo(fmt.Errorf("create network policy and pod %s: %w", s.Name, err))
	}
	if err := ctx.Err(); err != nil {
		return nil, undo(err)
	}
	if err := p.waitReady(mk, s.Name); err != nil {
		return nil, undo(fmt.Errorf("start pod %s: %w", s.Name, err))
	}
	if err := ctx.Err(); err != nil {
		return nil, undo(err)
	}
	return &provider.Sandbox{
		Ref: provider.Ref{ID: s.Name, NetworkID: s.Name}, Name: s.Name, Network: s.Name,
		State: provider.StateRunning, Created: time.Now().UTC(), Labels: s.Labels,
	}, nil
}

// createPod creates a pod from its manifest and waits until it is ready.
// ErrConflict when the name is taken.
func (p *Provider) createPod(ctx context.Context, name string, manifest []byte) error {
	if _, err := p.run(ctx, p.Cmd("create", "-f", "-", "-o", "name").WithStdin(bytes.NewReader(manifest))); err != nil {
		return err
	}
	return p.waitReady(ctx, name)
}

// podFailures are waiting reasons from which a new pod does not recover by
// itself: the image cannot be had, the container cannot be made.
var podFailures = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "ErrImageNeverPull": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true, "CrashLoopBackOff": true,
}

// waitReady waits until the pod is ready, has failed, or the time limit of
// 3 minutes has passed: one watch of the pod (watchPod), which sees a
// failure it does not recover from by itself (a missing image) as the
// kubelet reports it. A RuntimeClass whose handler the node lacks changes
// nothing in the pod: the node's events are looked at for it every 4 s
// while the pod is not ready (noHandler, no call for a pod without one).
func (p *Provider) waitReady(ctx context.Context, name string) error {
	var last atomic.Pointer[podObject]
	wctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go func() {
		t := time.NewTicker(4 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			}
			if pod := last.Load(); pod != nil {
				if err := p.noHandler(wctx, pod); err != nil {
					stop(err)
				}
			}
		}
	}()
	err := p.watchPod(wctx, name, 3*time.Minute, func(pod *podObject) (bool, error) {
		last.Store(pod)
		switch {
		case pod.ready():
			return true, nil
		case pod.Metadata.DeletionTimestamp != nil:
			return false, fmt.Errorf("pod %s is being deleted", name)
		}
		if why := pod.failure(); why != "" {
			return false, fmt.Errorf("pod %s cannot start: %s (see `%s`)", name, why, p.Cmd("describe", "pod", name))
		}
		return false, nil
	})
	if cause := context.Cause(wctx); err != nil && ctx.Err() == nil && cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	if errors.Is(err, errWatchTimeout) {
		phase := "unknown"
		if pod := last.Load(); pod != nil {
			phase = pod.Status.Phase
		}
		return fmt.Errorf("pod %s is not ready after 3 minutes (phase %s; see `%s`)", name, phase, p.Cmd("describe", "pod", name))
	}
	return err
}

// noHandler is the error of a pod whose RuntimeClass names a handler its
// node's container runtime lacks (a RuntimeClass made before the runtime
// was installed): the kubelet retries making its sandbox for ever, so it
// is refused here, naming what to install. nil for any other pod.
func (p *Provider) noHandler(ctx context.Context, pod *podObject) error {
	var spec struct{ RuntimeClassName string }
	if json.Unmarshal(pod.Spec, &spec) != nil || spec.RuntimeClassName == "" {
		return nil
	}
	name := pod.Metadata.Name
	res, err := p.run(ctx, p.Cmd("get", "events", "--field-selector", "involvedObject.kind=Pod,involvedObject.name="+name+",reason=FailedCreatePodSandBox",
		"-o", "jsonpath={.items[*].message}"))
	if err != nil || !strings.Contains(string(res.Stdout), "no runtime for") {
		return nil
	}
	return fmt.Errorf("pod %s cannot start: its node has no runtime for the handler of RuntimeClass %s (%s): install that runtime on the cluster's nodes "+
		"(for gVisor: runsc and containerd-shim-runsc-v1, and a runsc runtime in containerd's configuration: https://gvisor.dev/docs/user_guide/containerd/quick_start/), or leave the runtime unset",
		name, spec.RuntimeClassName, firstLine(serverMessage(string(res.Stdout))))
}

// podObject is what is read of a pod, a NetworkPolicy or a ConfigMap.
type podObject struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name              string            `json:"name"`
		Namespace         string            `json:"namespace"`
		CreationTimestamp time.Time         `json:"creationTimestamp"`
		DeletionTimestamp *time.Time        `json:"deletionTimestamp"`
		Labels            map[string]string `json:"labels"`
		Annotations       map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec   json.RawMessage `json:"spec"`
	Status struct {
		Phase                 string `json:"phase"`
		PodIP                 string `json:"podIP"`
		Conditions            []struct{ Type, Status string }
		InitContainerStatuses []containerStatus `json:"initContainerStatuses"`
		ContainerStatuses     []containerStatus `json:"containerStatuses"`
	} `json:"status"`
}

type containerStatus struct {
	Name  string `json:"name"`
	State struct {
		Waiting    *struct{ Reason, Message string } `json:"waiting"`
		Running    *struct{}                         `json:"running"`
		Terminated *struct {
			ExitCode int    `json:"exitCode"`
			Reason   string `json:"reason"`
		} `json:"terminated"`
	} `json:"state"`
}

func (o *podObject) ready() bool {
	for _, c := range o.Status.Conditions {
		if c.Type == "Ready" && c.Status == "True" {
			return true
		}
	}
	return false
}

// failure says why a pod will not become ready, or "".
func (o *podObject) failure() string {
	if o.Status.Phase == "Failed" || o.Status.Phase == "Succeeded" {
		return "it ended (phase " + o.Status.Phase + ")"
	}
	for _, cs := range append(o.Status.InitContainerStatuses, o.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && podFailures[w.Reason] {
			return fmt.Sprintf("container %s: %s: %s", cs.Name, w.Reason, w.Message)
		}
		if t := cs.State.Terminated; t != nil && (cs.Name != prepareContainer || t.ExitCode != 0) {
			return fmt.Sprintf("container %s exited with code %d (%s)", cs.Name, t.ExitCode, t.Reason)
		}
	}
	return ""
}

// state maps a pod to a provider.State: running while its sandbox container
// runs; stopped once it ended, or while the pod is being deleted, or not yet
// started.
func (o *podObject) state() provider.State {
	if o.Metadata.DeletionTimestamp != nil {
		return provider.StateStopped
	}
	for _, cs := range o.Status.ContainerStatuses {
		if cs.Name == mainContainer && cs.State.Running != nil && o.Status.Phase == "Running" {
			return provider.StateRunning
		}
	}
	return provider.StateStopped
}

// deleteObjects deletes kind/name objects, waiting until they are gone; gone
// already is success.
func (p *Provider) deleteObjects(ctx context.Context, objs ...string) error {
	_, err := p.run(ctx, p.Cmd(append([]string{"delete", "--ignore-not-found", "--wait=true"}, objs...)...))
	return err
}

// List gets the pods, NetworkPolicies and ConfigMaps that carry sel's labels
// in one call, and joins them by name: a pod is the sandbox; a ConfigMap
// without its pod is a paused one; a NetworkPolicy alone is a leftover
// (StateNone). Only a key=value Kubernetes can hold goes to kubectl's
// selector; a bare key (any value) and a value it cannot select on (a path)
// are matched here, on the annotations, which every object litterbox ever
// made carries (its empty labels for bare keys came later).
func (p *Provider) List(ctx context.Context, sel provider.Selector) ([]provider.Sandbox, error) {
	var selector []string
	for k, v := range sel.Labels {
		if v != "" && validLabel(k, v) {
			selector = append(selector, k+"="+v)
		}
	}
	sort.Strings(selector)
	args := []string{"get", "pods,networkpolicies,configmaps", "-o", "json"}
	if len(selector) > 0 {
		args = append(args, "-l", strings.Join(selector, ","))
	}
	res, err := p.run(ctx, p.Cmd(args...))
	if err != nil {
		return nil, err
	}
	var list struct{ Items []podObject }
	if err := json.Unmarshal(res.Stdout, &list); err != nil {
		return nil, fmt.Errorf("parse kubectl get: %w", err)
	}
	pods, policies, paused := map[string]*podObject{}, map[string]*podObject{}, map[string]*podObject{}
	var names []string
	for i := range list.Items {
		o := &list.Items[i]
		if !matches(o.Metadata.Annotations, sel.Labels) {
			continue
		}
		switch o.Kind {
		case "Pod":
			pods[o.Metadata.Name] = o
		case "NetworkPolicy":
			policies[o.Metadata.Name] = o
		case "ConfigMap":
			if _, ok := o.Metadata.Annotations[annotationPod]; !ok {
				continue
			}
			paused[o.Metadata.Name] = o
		default:
			continue
		}
		if !contains(names, o.Metadata.Name) {
			names = append(names, o.Metadata.Name)
		}
	}
	out := make([]provider.Sandbox, 0, len(names))
	for _, name := range names {
		sb := provider.Sandbox{Name: name}
		var o *podObject
		switch {
		case pods[name] != nil:
			o = pods[name]
			sb.Ref.ID, sb.State = name, o.state()
		case paused[name] != nil:
			o = paused[name]
			sb.Ref.ID, sb.State = name, provider.StatePaused
		default:
			o = policies[name]
			sb.State = provider.StateNone
		}
		if policies[name] != nil {
			sb.Ref.NetworkID, sb.Network = name, name
		}
		sb.Created = o.Metadata.CreationTimestamp
		sb.Labels = map[string]string{}
		for _, k := range sel.Report {
			if v := o.Metadata.Annotations[k]; v != "" {
				sb.Labels[k] = v
			}
		}
		out = append(out, sb)
	}
	// Newest first, as on Docker.
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// matches reports whether annotations carry every label of want.
func matches(annotations, want map[string]string) bool {
	for k, v := range want {
		got, ok := annotations[k]
		if !ok || v != "" && got != v {
			return false
		}
	}
	return true
}

// getPod reads one pod; ErrNotFound when it does not exist.
func (p *Provider) getPod(ctx context.Context, name string) (*podObject, error) {
	res, err := p.run(ctx, p.Cmd("get", "pod", name, "-o", "json"))
	if err != nil {
		return nil, err
	}
	var o podObject
	if err := json.Unmarshal(res.Stdout, &o); err != nil {
		return nil, fmt.Errorf("parse pod %s: %w", name, err)
	}
	return &o, nil
}

// pausedRecord reads a paused sandbox's ConfigMap; ErrNotFound when there is
// none.
func (p *Provider) pausedRecord(ctx context.Context, name string) (*podObject, error) {
	res, err := p.run(ctx, p.Cmd("get", "configmap", name, "-o", "json"))
	if err != nil {
		return nil, err
	}
	var o podObject
	if err := json.Unmarshal(res.Stdout, &o); err != nil {
		return nil, fmt.Errorf("parse configmap %s: %w", name, err)
	}
	if _, ok := o.Metadata.Annotations[annotationPod]; !ok {
		return nil, provider.Errorf(provider.ErrNotFound, "configmap %s is not a paused sandbox's", name)
	}
	return &o, nil
}

// Pause ends a sandbox's pod, keeping what makes it again: a pod cannot be
// frozen. It records the pod in a ConfigMap of the same name (carrying the
// sandbox's labels, so List shows it paused), then deletes the pod. What
// was in the pod's memory (its processes, /src, /tmp) is gone: the service
// snapshots /src to the branch first, and fills the new pod from it at
// resume (see docs/kubernetes.md).
func (p *Provider) Pause(ctx context.Context, ref provider.Ref) (bool, error) {
	if ref.ID == "" {
		return false, provider.Errorf(provider.ErrNotFound, "pause: the sandbox has no pod")
	}
	pod, err := p.getPod(ctx, ref.ID)
	if errors.Is(err, provider.ErrNotFound) {
		if _, rerr := p.pausedRecord(ctx, ref.ID); rerr == nil {
			return true, nil
		}
		return false, err
	}
	if err != nil {
		return false, err
	}
	if pod.state() != provider.StateRunning {
		return false, provider.Errorf(provider.ErrStopped, "pause: pod %s is not running (phase %s)", ref.ID, pod.Status.Phase)
	}
	record, err := pausedManifest(pod)
	if err != nil {
		return false, err
	}
	mk := context.WithoutCancel(ctx)
	if _, err := p.run(mk, p.Cmd("create", "-f", "-", "-o", "name").WithStdin(bytes.NewReader(record))); err != nil && !errors.Is(err, provider.ErrConflict) {
		return false, fmt.Errorf("pause: record pod %s: %w", ref.ID, err)
	}
	if err := p.deleteObjects(mk, "pod/"+ref.ID); err != nil {
		return false, fmt.Errorf("pause: delete pod %s: %w", ref.ID, err)
	}
	p.stopForwards(ref.ID)
	return false, nil
}

// pausedManifest is the ConfigMap that records pod for resume: the pod's
// name, labels, annotations and spec (less the node it ran on).
func pausedManifest(pod *podObject) ([]byte, error) {
	var spec map[string]any
	if err := json.Unmarshal(pod.Spec, &spec); err != nil {
		return nil, err
	}
	delete(spec, "nodeName")
	again, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": meta{Name: pod.Metadata.Name, Labels: pod.Metadata.Labels, Annotations: pod.Metadata.Annotations}, "spec": spec})
	if err != nil {
		return nil, err
	}
	m := meta{Name: pod.Metadata.Name, Labels: map[string]string{}, Annotations: map[string]string{annotationPod: string(again)}}
	for k, v := range pod.Metadata.Labels {
		if k != labelPod {
			m.Labels[k] = v
		}
	}
	for k, v := range pod.Metadata.Annotations {
		m.Annotations[k] = v
	}
	return json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": m})
}

// Resume makes a paused sandbox's pod again from its record, behind its
// NetworkPolicy (refused when that is gone), waits for it to be ready, and
// drops the record. The new pod starts empty: the service
// fills it from the branch.
func (p *Provider) Resume(ctx context.Context, ref provider.Ref) (bool, error) {
	if ref.ID == "" {
		return false, provider.Errorf(provider.ErrNotFound, "resume: the sandbox has no pod")
	}
	record, err := p.pausedRecord(ctx, ref.ID)
	if errors.Is(err, provider.ErrNotFound) {
		pod, perr := p.getPod(ctx, ref.ID)
		if perr != nil {
			return false, perr
		}
		if pod.state() != provider.StateRunning {
			return false, provider.Errorf(provider.ErrStopped, "resume: pod %s is not running (phase %s)", ref.ID, pod.Status.Phase)
		}
		return true, nil
	}
	if err != nil {
		return false, err
	}
	// The pod is made again only behind its policy: without it (deleted
	// behind litterbox's back) it would be open to the cluster and beyond.
	policy, err := p.run(ctx, p.Cmd("get", "networkpolicy", ref.ID, "-o", "json"))
	if errors.Is(err, provider.ErrNotFound) {
		return false, fmt.Errorf("resume: the network policy %s of pod %s is gone (deleted behind litterbox's back), and the pod would be open without it: it is not made again. Its work is on its branch: remove the sandbox with `litterbox delete --force`, then `litterbox create --from-branch` makes it again", ref.ID, ref.ID)
	} else if err != nil {
		return false, fmt.Errorf("resume: read the network policy of pod %s: %w", ref.ID, err)
	}
	manifest, err := p.relink(ctx, []byte(record.Metadata.Annotations[annotationPod]), policy.Stdout)
	if err != nil {
		return false, fmt.Errorf("resume: %w", err)
	}
	mk := context.WithoutCancel(ctx)
	if err := p.createPod(mk, ref.ID, manifest); err != nil && !errors.Is(err, provider.ErrConflict) {
		return false, fmt.Errorf("resume: %w", err)
	}
	if err := p.deleteObjects(mk, "configmap/"+ref.ID); err != nil {
		return false, fmt.Errorf("resume: drop the record of pod %s: %w", ref.ID, err)
	}
	return false, nil
}

// relink is the manifest of a paused linked sandbox's pod with its
// gateway's address now: the gateway may have been made again meanwhile
// (a resume makes a gone one again), at another address. A gateway that
// is gone leaves the manifest as it was: the new pod reaches nothing (its
// policy lets it reach the gateway's pod alone). A pod made before
// annotationGateway finds its gateway by policy, the sandbox's
// NetworkPolicy: the one pod it lets the sandbox reach, so no other
// address can be given to it.
func (p *Provider) relink(ctx context.Context, manifest, policy []byte) ([]byte, error) {
	var pod struct {
		Metadata meta `json:"metadata"`
	}
	if err := json.Unmarshal(manifest, &pod); err != nil {
		return nil, fmt.Errorf("parse the paused pod's record: %w", err)
	}
	gw := pod.Metadata.Annotations[annotationGateway]
	if gw == "" {
		return p.relinkByPolicy(ctx, manifest, policy)
	}
	o, err := p.getPod(ctx, gw)
	if errors.Is(err, provider.ErrNotFound) {
		return manifest, nil
	}
	if err != nil {
		return nil, fmt.Errorf("find its egress gateway %s: %w", gw, err)
	}
	if o.Status.PodIP == "" {
		return manifest, nil
	}
	return linkedManifest(manifest, o.Status.PodIP)
}

// relinkByPolicy is relink for a pod that does not name its gateway: the
// gateway is the pod whose labelPod the sandbox's policy lets it reach
// (linkedRules). A policy that names no pod (an open sandbox's) or a
// gateway with no address leaves the manifest as it was.
func (p *Provider) relinkByPolicy(ctx context.Context, manifest, policy []byte) ([]byte, error) {
	var pol struct {
		Spec struct {
			Egress []struct {
				To []struct {
					PodSelector *struct{ MatchLabels map[string]string }
				}
			}
		}
	}
	if err := json.Unmarshal(policy, &pol); err != nil {
		return nil, fmt.Errorf("parse the sandbox's network policy: %w", err)
	}
	if len(pol.Spec.Egress) != 1 || len(pol.Spec.Egress[0].To) != 1 || pol.Spec.Egress[0].To[0].PodSelector == nil {
		return manifest, nil
	}
	gw := pol.Spec.Egress[0].To[0].PodSelector.MatchLabels[labelPod]
	if gw == "" {
		return manifest, nil
	}
	res, err := p.run(ctx, p.Cmd("get", "pods", "-l", labelPod+"="+gw, "-o", "jsonpath={.items[*].status.podIP}"))
	if err != nil {
		return nil, fmt.Errorf("find its egress gateway %s: %w", gw, err)
	}
	ips := strings.Fields(string(res.Stdout))
	if len(ips) != 1 {
		return manifest, nil
	}
	return linkedManifest(manifest, ips[0])
}

// linkedManifest is a linked sandbox's pod manifest set to find its
// gateway at gatewayIP (linkTo).
func linkedManifest(manifest []byte, gatewayIP string) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(manifest, &m); err != nil {
		return nil, fmt.Errorf("parse the paused pod's record: %w", err)
	}
	spec, ok := m["spec"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the paused pod's record has no spec")
	}
	linkTo(spec, gatewayIP)
	return json.Marshal(m)
}

// Remove deletes the pod and a paused sandbox's record (ref.ID), then the
// NetworkPolicy (ref.NetworkID); gone already is success. The pod's
// port-forwards end with it.
func (p *Provider) Remove(ctx context.Context, ref provider.Ref) error {
	if ref.ID != "" {
		p.stopForwards(ref.ID)
		objs := []string{"pod/" + ref.ID, "configmap/" + ref.ID}
		if ref.NetworkID != "" {
			// One call for all: the pod goes first (kubectl deletes in
			// the order given), and a failure leaves the policy too.
			objs = append(objs, "networkpolicy/"+ref.NetworkID)
		}
		if err := p.deleteObjects(ctx, objs...); err != nil {
			return fmt.Errorf("remove pod: %w", err)
		}
		return nil
	}
	if ref.NetworkID != "" {
		if err := p.deleteObjects(ctx, "networkpolicy/"+ref.NetworkID); err != nil {
			return fmt.Errorf("remove network policy: %w", err)
		}
	}
	return nil
}

// execScript runs the command in the asked directory ("." is the
// container's own) with the asked environment; through sh, so a missing
// program is 127 as on Docker (run directly, kubectl reports it as its own
// failure, exit 1). A directory it cannot enter drains stdin before it
// exits: kubectl exec -i waits until its stdin is taken.
const execScript = `cd "$1" || { cat >/dev/null; exit 126; }; shift; exec "$@"`

// execArgs builds the argv of kubectl exec for r, in container c.
func execArgs(r provider.ExecRequest, c, workdir string) []string {
	args := []string{"exec"}
	if r.Stdin != nil || r.Interactive {
		args = append(args, "-i")
	}
	if r.TTY {
		args = append(args, "-t")
	}
	args = append(args, r.Ref.ID, "-c", c, "--", "sh", "-c", execScript, "sh", cmp.Or(r.Workdir, workdir))
	if len(r.Env) > 0 {
		args = append(append(args, "env"), r.Env...)
	}
	return append(args, r.Cmd...)
}

// container picks the container whose user is user: kubectl exec cannot
// change it.
func container(user string) (string, error) {
	switch user {
	case "", "1000", "1000:1000":
		return mainContainer, nil
	case "0", "0:0", "root":
		return rootContainer, nil
	}
	return "", provider.Errorf(provider.ErrUnsupported, "exec as user %q: kubectl exec runs as the container's user; a sandbox pod has 1000:1000 and 0:0", user)
}

// exitLinePrefix begins the line kubectl writes to its stderr, after the
// remote command's stderr has ended, when that command exited non-zero:
// "command terminated with exit code N\n", and kubectl then exits N.
const exitLinePrefix = "command terminated with exit code "

// maxExitLine is the longest such line: the prefix, up to 10 digits, and
// the newline.
const maxExitLine = len(exitLinePrefix) + 10 + 1

// exitLine is kubectl's line for exit code code.
func exitLine(code int) string { return exitLinePrefix + strconv.Itoa(code) + "\n" }

// trimExitLine drops kubectl's line from the end of stderr when kubectl
// exited with the code it names; a line of that form the command printed
// itself comes before kubectl's, or names a code kubectl did not exit with,
// and is kept.
func trimExitLine(stderr []byte, code int) ([]byte, bool) {
	if code == 0 {
		return stderr, false
	}
	line := exitLine(code)
	if !bytes.HasSuffix(stderr, []byte(line)) {
		return stderr, false
	}
	return stderr[:len(stderr)-len(line)], true
}

// Exec runs a command in the sandbox's pod with kubectl exec; kubectl exits
// with the command's code. A pod that is gone while its record exists is a
// paused sandbox.
func (p *Provider) Exec(ctx context.Context, r provider.ExecRequest) (provider.ExecResult, error) {
	c, err := container(r.User)
	if err != nil {
		return provider.ExecResult{}, err
	}
	cmd := p.Cmd(execArgs(r, c, ".")...).As(r.Kind)
	if r.Stdin != nil {
		cmd.WithStdin(r.Stdin)
	}
	var filter *exitFilter
	if r.Stdout != nil {
		cmd.WithStdout(r.Stdout)
	}
	if r.Stderr != nil {
		filter = &exitFilter{w: r.Stderr}
		cmd.WithStderr(filter)
	}
	res, err := p.o.Runner.Run(ctx, cmd)
	if filter != nil {
		filter.flush(res.ExitCode)
	}
	out := provider.ExecResult{ExitCode: res.ExitCode, Stdout: res.Stdout}
	out.Stderr, _ = trimExitLine(res.Stderr, res.ExitCode)
	var ee *runner.ExitError
	if errors.As(err, &ee) {
		// The command's own exit code, when kubectl's stderr ends with
		// its line for that code; else kubectl itself failed.
		if stderr, ok := trimExitLine([]byte(ee.Stderr), ee.ExitCode); ok {
			out.ExitCode = ee.ExitCode
			if r.Stderr != nil {
				out.Stderr = stderr // the tail the runner kept
			}
			return out, nil
		}
	}
	err = p.classify(err)
	if errors.Is(err, provider.ErrNotFound) {
		if _, rerr := p.pausedRecord(ctx, r.Ref.ID); rerr == nil {
			return out, provider.Errorf(provider.ErrPaused, "sandbox pod %s is paused (deleted, with its record kept)", r.Ref.ID)
		}
	}
	return out, err
}

// exitFilter passes streamed stderr through as it comes, holding back only
// the tail that could still be the start of kubectl's exit line (at most
// maxExitLine bytes, whatever the stream holds: a stream without newlines
// costs no memory), and drops that line at the end only when kubectl exited
// with the code it names (trimExitLine). kubectl writes it after the remote
// stderr has ended, right after its last byte, newline or not, so it may
// start anywhere in a line.
type exitFilter struct {
	w    io.Writer
	hold []byte
	err  error // the first write error of w; later output is dropped
}

func (f *exitFilter) Write(b []byte) (int, error) {
	f.hold = append(f.hold, b...)
	i := exitLineStart(f.hold)
	f.pass(f.hold[:i])
	f.hold = append(f.hold[:0], f.hold[i:]...)
	return len(b), f.err
}

// exitLineStart is where the longest tail of b that could begin kubectl's
// exit line starts (len(b) when none can).
func exitLineStart(b []byte) int {
	for i := max(0, len(b)-maxExitLine); i < len(b); i++ {
		if b[i] == exitLinePrefix[0] && couldBeExitLine(b[i:]) {
			return i
		}
	}
	return len(b)
}

// couldBeExitLine reports whether b is the start of (or all of) an exit
// line: a prefix of exitLinePrefix, or all of it followed by up to 10
// digits and, at the very end, a newline.
func couldBeExitLine(b []byte) bool {
	if len(b) <= len(exitLinePrefix) {
		return exitLinePrefix[:len(b)] == string(b)
	}
	if string(b[:len(exitLinePrefix)]) != exitLinePrefix {
		return false
	}
	digits := b[len(exitLinePrefix):]
	if digits[len(digits)-1] == '\n' {
		digits = digits[:len(digits)-1]
		if len(digits) == 0 {
			return false
		}
	}
	if len(digits) > 10 {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func (f *exitFilter) pass(b []byte) {
	if len(b) > 0 && f.err == nil {
		_, f.err = f.w.Write(b)
	}
}

// flush ends the stream: kubectl exited with code.
func (f *exitFilter) flush(code int) {
	rest, _ := trimExitLine(f.hold, code)
	f.pass(rest)
	f.hold = nil
}

// Image looks for an image among those the cluster's nodes hold (never a
// pull): found, its platform is its node's. One no node holds is
// ErrNoImage; a pod that names it pulls it, where the cluster can.
func (p *Provider) Image(ctx context.Context, name string) (provider.Image, error) {
	res, err := p.run(ctx, p.Cmd("get", "nodes", "-o", "json"))
	if err != nil {
		return provider.Image{}, err
	}
	var nodes struct {
		Items []struct {
			Status struct {
				NodeInfo struct{ OperatingSystem, Architecture string }
				Images   []struct{ Names []string }
			}
		}
	}
	if err := json.Unmarshal(res.Stdout, &nodes); err != nil {
		return provider.Image{}, fmt.Errorf("parse nodes: %w", err)
	}
	want := normalizeImage(name)
	for _, n := range nodes.Items {
		for _, img := range n.Status.Images {
			for _, nm := range img.Names {
				if normalizeImage(nm) == want {
					id := img.Names[0]
					for _, nm := range img.Names {
						if strings.Contains(nm, "@sha256:") {
							id = nm
						}
					}
					return provider.Image{ID: id, OS: n.Status.NodeInfo.OperatingSystem, Arch: n.Status.NodeInfo.Architecture}, nil
				}
			}
		}
	}
	return provider.Image{}, provider.Errorf(provider.ErrNoImage, "image %s is on no node of the cluster (litterbox does not pull to look; a pod pulls it where the cluster can)", name)
}

// normalizeImage spells an image reference as containerd lists it:
// docker.io/library/busybox:latest for busybox.
func normalizeImage(ref string) string {
	if strings.Contains(ref, "@") {
		return ref
	}
	first, _, hasSlash := strings.Cut(ref, "/")
	if !hasSlash {
		ref = "docker.io/library/" + ref
	} else if !strings.ContainsAny(first, ".:") && first != "localhost" {
		ref = "docker.io/" + ref
	}
	last := ref[strings.LastIndexByte(ref, '/')+1:]
	if !strings.Contains(last, ":") {
		ref += ":latest"
	}
	return ref
}

// PauseEnds says that Pause deletes the pod: see provider.PauseEnder.
func (p *Provider) PauseEnds() bool { return true }

var (
	_ provider.PauseEnder     = (*Provider)(nil)
	_ provider.RuntimeChecker = (*Provider)(nil)
	_ provider.SpecChecker    = (*Provider)(nil)
)

// CheckRuntime makes sure the cluster has a RuntimeClass for runtime ("" is
// the nodes' default) and returns its name, which the Spec then carries:
// the class of that name, or for gVisor (provider.RuntimeGVisor) one whose
// handler is runsc, whatever its name.
func (p *Provider) CheckRuntime(ctx context.Context, runtime string) (string, error) {
	if runtime == "" {
		return "", nil
	}
	name, _, err := p.runtimeClass(ctx, runtime)
	return name, err
}

// CheckSpec refuses, before anything is made, a spec Create would refuse
// once the service has made the sandbox's branch and gateway: ports under
// gVisor (portsUnder). It asks the cluster only for a spec with both.
func (p *Provider) CheckSpec(ctx context.Context, s provider.Spec) error {
	if s.Runtime == "" || len(s.Ports) == 0 {
		return nil
	}
	_, handler, err := p.runtimeClass(ctx, s.Runtime)
	if err != nil {
		return err
	}
	return portsUnder(handler, s)
}

// portsUnder refuses s's ports under the RuntimeClass handler when it is
// gVisor's: gVisor's own network stack holds the pod's sockets, and the
// node's, where kubectl port-forward dials, has none.
func portsUnder(handler string, s provider.Spec) error {
	if handler != gvisorHandler || len(s.Ports) == 0 {
		return nil
	}
	return provider.Errorf(provider.ErrUnsupported, "kubectl port-forward cannot reach a port of a pod under gVisor (RuntimeClass %s: its sockets are in gVisor's own network stack, https://github.com/google/gvisor/issues/3811), so its ports could not be published: "+
		"remove the ports ([ports] in .litterbox.toml) or leave the runtime unset", s.Runtime)
}

// foundClass is a RuntimeClass runtimeClass found: its name and handler.
type foundClass struct{ name, handler string }

// runtimeClass is CheckRuntime's class for runtime (not "") and its
// handler. A class found is kept while the provider lives, under the
// runtime asked and under its own name (what the Spec then carries), so
// that a create's checks and the create ask the cluster once; a runtime
// not found is asked again, for a class made since.
func (p *Provider) runtimeClass(ctx context.Context, runtime string) (name, handler string, err error) {
	if c, ok := p.classes.Load(runtime); ok {
		return c.(foundClass).name, c.(foundClass).handler, nil
	}
	res, err := p.run(ctx, p.Cmd("get", "runtimeclass", "-o", `jsonpath={range .items[*]}{.metadata.name}={.handler}{"\n"}{end}`))
	if err != nil {
		return "", "", fmt.Errorf("list the cluster's RuntimeClasses: %w", err)
	}
	if name, handler := runtimeClass(string(res.Stdout), runtime); name != "" {
		p.classes.Store(runtime, foundClass{name, handler})
		p.classes.Store(name, foundClass{name, handler})
		return name, handler, nil
	}
	if runtime == provider.RuntimeGVisor {
		return "", "", provider.Errorf(provider.ErrNoRuntime, "the cluster has no RuntimeClass for gVisor (none named %q, none whose handler is %q; `%s` lists those it has): "+
			"on every node install runsc and containerd-shim-runsc-v1 and add a runsc runtime to containerd's configuration (https://gvisor.dev/docs/user_guide/containerd/quick_start/), "+
			"then make the class: `echo '{\"apiVersion\":\"node.k8s.io/v1\",\"kind\":\"RuntimeClass\",\"metadata\":{\"name\":\"gvisor\"},\"handler\":\"runsc\"}' | kubectl apply -f -`; or leave the runtime unset",
			runtime, gvisorHandler, p.Cmd("get", "runtimeclass"))
	}
	return "", "", provider.Errorf(provider.ErrNoRuntime, "the cluster has no RuntimeClass %q (`%s` lists those it has): "+
		"install the runtime on its nodes and make a RuntimeClass of that name, or leave the runtime unset", runtime, p.Cmd("get", "runtimeclass"))
}

// gvisorHandler is gVisor's runtime handler in containerd's configuration,
// as its documentation names it.
const gvisorHandler = "runsc"

// runtimeClass picks the RuntimeClass for runtime among classes (lines of
// name=handler): the one of that name, else for gVisor the first whose
// handler is runsc; "" when none. handler is the class's.
func runtimeClass(classes, runtime string) (name, handler string) {
	var byHandler string
	for _, line := range strings.Split(classes, "\n") {
		n, h, _ := strings.Cut(strings.TrimSpace(line), "=")
		switch {
		case n == "":
		case n == runtime:
			return n, h
		case runtime == provider.RuntimeGVisor && h == gvisorHandler && byHandler == "":
			byHandler = n
		}
	}
	if byHandler == "" {
		return "", ""
	}
	return byHandler, gvisorHandler
}
