package kubernetes

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/litterbox-dev/litterbox/provider"
)

// LabelPorts records a sandbox's named ports, as an annotation.
const LabelPorts = provider.LabelPorts

// labelPod is the label every sandbox pod carries, with a value derived
// from its name (a label value has at most 63 characters), so its
// NetworkPolicy can select it, and other sandboxes can be told apart from
// other pods.
const labelPod = "dev.litterbox.pod"

// Container names in a sandbox pod. The agent's commands run in "sandbox";
// "root" runs the few commands litterbox itself runs as root (kubectl exec
// cannot change the user): it shares the pod's volumes and has the same
// hardening, less the non-root user; "prepare" is the init container that
// gives the memory volumes their owners and modes, with CHOWN and FOWNER
// only, and exits before the sandbox starts.
const (
	mainContainer    = "sandbox"
	rootContainer    = "root"
	prepareContainer = "prepare"
)

var (
	labelValueRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$`) })
	labelKeyRE   = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	})
)

// validLabel reports whether k=v can be a Kubernetes label. Every label of
// a spec is an annotation; only these are labels too.
func validLabel(k, v string) bool {
	return labelKeyRE().MatchString(k) && labelValueRE().MatchString(v)
}

// podLabelValue is labelPod's value for a pod: its name, or, when that is
// too long for a label value, a prefix and a hash of it.
func podLabelValue(name string) string {
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return strings.TrimRight(name[:46], "-_.") + "-" + hex.EncodeToString(sum[:])[:16]
}

// meta is an object's metadata as the manifests here need it.
type meta struct {
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// objectMeta splits a spec's labels (and extra ones) into labels and
// annotations: each is an annotation, and a label too, empty when its value
// cannot be a label's (a path), so that a selector can still ask for the
// key (List).
func objectMeta(name string, labels map[string]string) (meta, error) {
	m := meta{Name: name, Labels: map[string]string{}, Annotations: map[string]string{}}
	for k, v := range labels {
		if !labelKeyRE().MatchString(k) {
			return m, fmt.Errorf("label key %q cannot be a Kubernetes annotation key", k)
		}
		m.Annotations[k] = v
		m.Labels[k] = ""
		if validLabel(k, v) {
			m.Labels[k] = v
		}
	}
	return m, nil
}

// podManifest is the pod of a sandbox (see the package comment), as JSON
// kubectl create takes. gatewayIP is the address of a linked sandbox's
// gateway (s.Link), which the pod finds by provider.GatewayHost and
// resolves names with; "" for any other pod.
func podManifest(s provider.Spec, gatewayIP string) ([]byte, error) {
	labels := make(map[string]string, len(s.Labels)+1)
	for k, v := range s.Labels {
		labels[k] = v
	}
	if len(s.Ports) > 0 {
		labels[LabelPorts] = provider.PortsLabel(s.Ports)
	}
	m, err := objectMeta(s.Name, labels)
	if err != nil {
		return nil, err
	}
	m.Labels[labelPod] = podLabelValue(s.Name)
	if s.Link != nil && !isGateway(s) {
		m.Annotations[annotationGateway] = s.Link.Gateway
	}
	uid, gid, err := userIDs(s.User)
	if err != nil {
		return nil, err
	}
	var mounts []any
	var volumes []any
	var prepare []string
	for i, t := range s.Tmpfs {
		vol := fmt.Sprintf("mem%d", i)
		ed := map[string]any{"medium": "Memory"}
		if t.Size > 0 {
			ed["sizeLimit"] = strconv.FormatInt(t.Size, 10)
		}
		volumes = append(volumes, map[string]any{"name": vol, "emptyDir": ed})
		mounts = append(mounts, map[string]any{"name": vol, "mountPath": t.Path})
		if t.Owner != "" {
			prepare = append(prepare, "chown "+shellQuote(t.Owner)+" "+shellQuote(t.Path))
		}
		prepare = append(prepare, fmt.Sprintf("chmod %o %s", t.Mode, shellQuote(t.Path)))
	}
	harden := func(uid, gid int64, add ...string) map[string]any {
		sc := map[string]any{
			"runAsUser": uid, "runAsGroup": gid, "runAsNonRoot": uid != 0,
			"readOnlyRootFilesystem":   s.ReadOnlyRoot,
			"allowPrivilegeEscalation": !s.NoNewPrivileges,
		}
		if s.DropCaps {
			caps := map[string]any{"drop": []string{"ALL"}}
			if len(add) > 0 {
				caps["add"] = add
			}
			sc["capabilities"] = caps
		}
		return sc
	}
	small := map[string]any{"limits": map[string]string{"cpu": "500m", "memory": "64Mi"}, "requests": map[string]string{"cpu": "10m", "memory": "8Mi"}}
	limits := map[string]string{}
	if s.Limits.CPUs > 0 {
		limits["cpu"] = fmt.Sprintf("%dm", int64(s.Limits.CPUs*1000))
	}
	if s.Limits.Memory > 0 {
		limits["memory"] = strconv.FormatInt(s.Limits.Memory, 10)
	}
	// s.Limits.Log has no field in a pod: the kubelet rotates every
	// container's log itself (containerLogMaxSize, 10 MiB, and
	// containerLogMaxFiles, 5, by default), which bounds a pod's output on
	// the node's disk whatever the pod asks.
	cmd := s.Cmd
	if s.Init {
		// No init is offered: sh as PID 1 reaps what is left to it while
		// it waits, and ends on SIGTERM, so a delete does not wait out the
		// grace period.
		cmd = append([]string{"sh", "-c", `trap 'exit 0' TERM; "$@" & wait`, "sh"}, cmd...)
	}
	var env []any
	for _, kv := range s.Env {
		k, v, _ := strings.Cut(kv, "=")
		env = append(env, map[string]string{"name": k, "value": v})
	}
	main := map[string]any{
		"name": mainContainer, "image": s.Image, "imagePullPolicy": "IfNotPresent",
		"command": cmd, "env": env, "securityContext": harden(uid, gid),
		"resources":    map[string]any{"limits": limits, "requests": map[string]string{"cpu": "10m", "memory": "16Mi"}},
		"volumeMounts": mounts,
	}
	if s.Workdir != "" {
		main["workingDir"] = s.Workdir
	}
	var ports []any
	for _, p := range s.Ports {
		ports = append(ports, map[string]any{"name": portName(p.Name), "containerPort": p.Port, "protocol": "TCP"})
	}
	if len(ports) > 0 {
		main["ports"] = ports
	}
	containers := []any{main}
	if uid != 0 && !isGateway(s) {
		containers = append(containers, map[string]any{
			"name": rootContainer, "image": s.Image, "imagePullPolicy": "IfNotPresent",
			"command":         []string{"sh", "-c", `trap 'exit 0' TERM; sleep 2147483647 & wait`},
			"securityContext": harden(0, 0), "resources": small, "volumeMounts": mounts,
		})
	}
	spec := map[string]any{
		"automountServiceAccountToken":  false,
		"enableServiceLinks":            false,
		"restartPolicy":                 "Never",
		"terminationGracePeriodSeconds": 2,
		"securityContext":               map[string]any{"seccompProfile": map[string]string{"type": "RuntimeDefault"}},
		"containers":                    containers,
		"volumes":                       volumes,
	}
	if len(prepare) > 0 {
		spec["initContainers"] = []any{map[string]any{
			"name": prepareContainer, "image": s.Image, "imagePullPolicy": "IfNotPresent",
			"command":         []string{"sh", "-c", "set -e; " + strings.Join(prepare, "; ")},
			"securityContext": harden(0, 0, "CHOWN", "FOWNER"), "resources": small, "volumeMounts": mounts,
		}}
	}
	if s.Hostname != "" {
		spec["hostname"] = s.Hostname
	}
	if len(s.DNS) > 0 {
		spec["dnsPolicy"] = "None"
		spec["dnsConfig"] = map[string]any{"nameservers": s.DNS}
	}
	if gatewayIP != "" {
		linkTo(spec, gatewayIP)
	}
	if isGateway(s) {
		claimVolume(spec, main)
	}
	if len(s.Sysctls) > 0 {
		var sysctls []any
		for _, k := range slices.Sorted(maps.Keys(s.Sysctls)) {
			sysctls = append(sysctls, map[string]string{"name": k, "value": s.Sysctls[k]})
		}
		spec["securityContext"].(map[string]any)["sysctls"] = sysctls
	}
	if s.Runtime != "" {
		// A RuntimeClass of the cluster names the runtime (its handler
		// in the nodes' containerd: runsc for gVisor).
		spec["runtimeClassName"] = s.Runtime
	}
	if _, arch, ok := strings.Cut(s.Platform, "/"); ok {
		spec["nodeSelector"] = map[string]string{"kubernetes.io/arch": arch}
	}
	return json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": m, "spec": spec})
}

// deniedV4 and deniedV6 are the addresses a sandbox pod may not reach, as
// agent-sandbox's default policy denies them: private ranges (where a
// cluster's pods, services, API server and DNS live, and most of a company's
// network), carrier-grade NAT, loopback and link-local (the cloud's metadata
// endpoint, 169.254.169.254 and fd00:ec2::254, where a node's credentials
// are). The apiserver refuses ::ffff:0:0/96 (IPv4 as IPv6 spells it) as an
// exception to ::/0.
var (
	deniedV4 = []string{"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.168.0.0/16"}
	deniedV6 = []string{"::1/128", "fc00::/7", "fe80::/10"}
)

// clusterDNS is the one cluster service a sandbox pod may reach: the
// cluster's resolver pods (kube-system's k8s-app=kube-dns, the label both
// kube-dns and CoreDNS carry), on port 53 only, so names resolve as on any
// pod. It lets the pod learn the names of the cluster's services, not reach
// them (their addresses are private); and it opens no way out the public
// internet does not already give an open pod. Public resolvers instead would
// fail where a company's network allows only its own.
var clusterDNS = map[string]any{
	"to": []any{map[string]any{
		"namespaceSelector": map[string]any{"matchLabels": map[string]string{"kubernetes.io/metadata.name": "kube-system"}},
		"podSelector":       map[string]any{"matchLabels": map[string]string{"k8s-app": "kube-dns"}},
	}},
	"ports": []any{map[string]any{"protocol": "UDP", "port": 53}, map[string]any{"protocol": "TCP", "port": 53}},
}

// policyManifest is the NetworkPolicy of a sandbox: no traffic comes in
// (kubectl port-forward does not pass through the pod network), and what
// goes out may reach the public internet only: no pod (a sandbox's or any
// other) but the cluster's resolvers on port 53 (clusterDNS), no service, no
// address in deniedV4 or deniedV6. Pods and services
// are not named as peers, so they are reached only where their addresses
// are public, which a cluster's seldom are.
//
// A linked Spec's policy is linkedRules', closed being the cluster's
// ranges.
func policyManifest(s provider.Spec, closed []string) ([]byte, error) {
	m, err := objectMeta(s.Name, s.Labels)
	if err != nil {
		return nil, err
	}
	ingress, egress := []any{}, []any{map[string]any{"to": []any{
		map[string]any{"ipBlock": map[string]any{"cidr": "0.0.0.0/0", "except": deniedV4}},
		map[string]any{"ipBlock": map[string]any{"cidr": "::/0", "except": deniedV6}},
	}}, clusterDNS}
	if s.Link != nil {
		ingress, egress = linkedRules(s, closed)
	}
	spec := map[string]any{
		"podSelector": map[string]any{"matchLabels": map[string]string{labelPod: podLabelValue(s.Name)}},
		"policyTypes": []string{"Ingress", "Egress"},
		"ingress":     ingress,
		"egress":      egress,
	}
	return json.Marshal(map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": m, "spec": spec})
}

// gatewayHost is the name a linked sandbox finds its gateway by, in its
// /etc/hosts (provider.GatewayLinks).
const gatewayHost = "litterbox-gateway"

// annotationGateway, on a linked sandbox's pod, names its gateway's pod,
// whose address the pod is given at its start (podManifest): a resume
// gives the new pod the gateway's address then (relink), which is
// another once the gateway was made again.
const annotationGateway = "dev.litterbox.k8s-gateway"

// linkTo sets a linked sandbox pod's spec (a manifest's "spec") to find
// its gateway at gatewayIP, and resolve names with it.
func linkTo(spec map[string]any, gatewayIP string) {
	spec["hostAliases"] = []any{map[string]any{"ip": gatewayIP, "hostnames": []string{gatewayHost}}}
	spec["dnsPolicy"] = "None"
	spec["dnsConfig"] = map[string]any{"nameservers": []string{gatewayIP}}
}

// claimVolume gives a gateway pod's spec (a manifest's "spec", and its
// main container) its own annotationClaimed, read-only at claimDir
// (GatewayNameFile).
func claimVolume(spec, main map[string]any) {
	spec["volumes"] = append(spec["volumes"].([]any), map[string]any{"name": "claim", "downwardAPI": map[string]any{
		"defaultMode": 0o444,
		"items":       []any{map[string]any{"path": claimItem, "fieldRef": map[string]string{"fieldPath": "metadata.annotations['" + annotationClaimed + "']"}}},
	}})
	main["volumeMounts"] = append(main["volumeMounts"].([]any), map[string]any{"name": "claim", "mountPath": claimDir, "readOnly": true})
}

// isGateway says s is a linked gateway's Spec.
func isGateway(s provider.Spec) bool { return s.Link != nil && s.Link.Gateway == s.Name }

// linkPorts are a link's ports, as a NetworkPolicy rule names them.
func linkPorts(l *provider.Link) []any {
	var ports []any
	for _, p := range l.TCP {
		ports = append(ports, map[string]any{"protocol": "TCP", "port": p})
	}
	for _, p := range l.UDP {
		ports = append(ports, map[string]any{"protocol": "UDP", "port": p})
	}
	return ports
}

// podPeer is a NetworkPolicy peer: the pod named name, in the namespace.
func podPeer(name string) map[string]any {
	return map[string]any{"podSelector": map[string]any{"matchLabels": map[string]string{labelPod: podLabelValue(name)}}}
}

// linkedRules are the ingress and egress rules of a linked Spec's policy
// (provider.GatewayLinks). The sandbox: nothing comes in, and it goes out
// to its gateway's ports only. The gateway: only its sandbox comes in, on
// those ports; it goes out beyond the cluster only (0.0.0.0/0 and ::/0
// less closed, the cluster's pod and service ranges, and link-local, where
// the metadata endpoint is), and to the cluster's resolvers, which resolve
// the names its sandbox asks for. What else it may not reach (private
// ranges, the nodes) it refuses itself.
func linkedRules(s provider.Spec, closed []string) (ingress, egress []any) {
	l := s.Link
	if !isGateway(s) {
		return []any{}, []any{map[string]any{"to": []any{podPeer(l.Gateway)}, "ports": linkPorts(l)}}
	}
	ingress = []any{map[string]any{"from": []any{podPeer(l.Sandbox)}, "ports": linkPorts(l)}}
	v4, v6 := []string{"169.254.0.0/16"}, []string{"fe80::/10"}
	for _, c := range closed {
		if strings.Contains(c, ":") {
			v6 = append(v6, c)
		} else if c != "0.0.0.0/0" {
			v4 = append(v4, c)
		}
	}
	egress = []any{map[string]any{"to": []any{
		map[string]any{"ipBlock": map[string]any{"cidr": "0.0.0.0/0", "except": v4}},
		map[string]any{"ipBlock": map[string]any{"cidr": "::/0", "except": slices.DeleteFunc(v6, func(c string) bool { return c == "::/0" })}},
	}}, clusterDNS}
	return ingress, egress
}

// userIDs reads "uid[:gid]"; "" is 0:0, as the image would say for
// busybox.
func userIDs(user string) (uid, gid int64, err error) {
	if user == "" {
		return 0, 0, nil
	}
	u, g, hasG := strings.Cut(user, ":")
	if uid, err = strconv.ParseInt(u, 10, 64); err != nil {
		return 0, 0, provider.Errorf(provider.ErrUnsupported, "user %q: a pod's user must be numeric (uid:gid)", user)
	}
	gid = uid
	if hasG {
		if gid, err = strconv.ParseInt(g, 10, 64); err != nil {
			return 0, 0, provider.Errorf(provider.ErrUnsupported, "user %q: a pod's group must be numeric (uid:gid)", user)
		}
	}
	return uid, gid, nil
}

// portName is a container port's name: at most 15 characters, lower case
// letters, digits and dashes. Only informative: Ports goes by number.
func portName(name string) string {
	b := []byte(strings.ToLower(name))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			b[i] = '-'
		}
	}
	s := strings.Trim(string(b), "-")
	if len(s) > 15 {
		s = strings.Trim(s[:15], "-")
	}
	if s == "" || !strings.ContainsAny(s, "abcdefghijklmnopqrstuvwxyz") {
		s = "p" + s
	}
	return s
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
