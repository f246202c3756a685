package api

// Check is one line of `litterbox doctor`: what was checked, how it went,
// what was found, and, when it did not pass, what to do.
type Check struct {
	Name   string      `json:"name"`
	Status CheckStatus `json:"status"`
	Detail string      `json:"detail"`
	Fix    string      `json:"fix,omitempty"`
}

// CheckStatus is the outcome of a check.
type CheckStatus string

// Outcomes. Only CheckFail makes doctor fail: a warning is something that
// works, with a limit the user should know of; a skipped check could not run
// because one before it failed.
const (
	CheckOK   CheckStatus = "ok"
	CheckWarn CheckStatus = "warn"
	CheckFail CheckStatus = "fail"
	CheckSkip CheckStatus = "skip"
)
