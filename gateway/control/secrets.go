package control

// Secret is a credential the gateway adds to the requests of a sandbox for
// the hosts it is bound to. The sandbox holds only Placeholder; Value
// reaches the gateway from the host over the control socket (on stdin:
// never an argument), stays in the gateway's memory, and leaves it only in
// requests to Hosts, over TLS the gateway makes itself and verifies.
type Secret struct {
	// Name is the user's name for the secret, in records and messages.
	Name string `json:"name"`
	// Placeholder is what the sandbox holds instead of the value: random
	// per sandbox, replaced by the value on the way out to Hosts.
	Placeholder string `json:"placeholder"`
	// Value is the credential. Nothing the gateway writes (a record, a
	// message, a control answer) holds it.
	Value string `json:"value"`
	// Hosts are entries (ParseEntry) of the hosts the value may go to.
	Hosts []string `json:"hosts"`
	// Header, "Name: template", is a header the gateway sets on every
	// request to Hosts, with "{}" in the template replaced by the value:
	// "Authorization: Bearer {}".
	Header string `json:"header,omitempty"`
	// Basic, "user:password" with "{}" for the value, is sent as an
	// Authorization: Basic header on every request to Hosts: git over
	// https ("x-access-token:{}").
	Basic string `json:"basic,omitempty"`
}

// Secrets is what the host gives the gateway (`ctl secrets`, JSON on
// stdin).
type Secrets struct {
	Secrets []Secret `json:"secrets"`
	// Roots are more CA certificates (PEM) the gateway trusts, besides the
	// system's, when it verifies a bound host's real server: a company's
	// own CA, or a test's. They come from the host, never from the
	// sandbox.
	Roots []string `json:"roots,omitempty"`
}

// SecretsInfo is the answer to `ctl secrets`: never a value.
type SecretsInfo struct {
	// CA is the certificate (PEM) of the gateway's own CA, which signs the
	// certificates it shows the sandbox for the bound hosts: what the
	// sandbox trusts. Its key never leaves the gateway's memory.
	CA    string      `json:"ca,omitempty"`
	Bound []BoundInfo `json:"bound"`
}

// BoundInfo is one secret as the gateway holds it, without its value.
type BoundInfo struct {
	Name        string   `json:"name"`
	Placeholder string   `json:"placeholder"`
	Hosts       []string `json:"hosts"`
	// Sent is how the value is sent: "header NAME", "basic", or
	// "placeholder" (where the sandbox puts it in a header).
	Sent string `json:"sent"`
}

// MinSecretValue is the shortest value: a response is scrubbed of the
// value, and a short one would be found where it is no secret.
const MinSecretValue = 8
