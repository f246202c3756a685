// Package api is the vocabulary of the sandbox service: the types that
// cross its façade (package sandbox) and that the front ends (commands/,
// mcp/, ui/) name. The repository and a sandbox's handle, the labels and
// names litterbox gives what it makes, the outcomes callers branch on
// (errors), a sandbox's Status, and every operation's options and result.
// The concerns under sandbox/internal and the front ends both import it;
// it imports none of them.
//
// It is also the one place the contract of `litterbox ... --json` and of
// the MCP tools' structuredContent is read: those are these types, encoded
// by encoding/json with the tags written here. A field renamed or retagged
// here changes what scripts and agents read.
//
// Each file holds the words of one concern: core.go those every concern
// shares (the repository, the handle, labels, names, the options),
// errors.go the outcomes, files.go the file tools', inventory.go list's,
// provision.go create's and so on.
package api
