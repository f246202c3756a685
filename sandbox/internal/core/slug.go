package core

import (
	"errors"
	"fmt"
	"strings"
)

// MaxNameLen is the longest valid slug: a Docker container name part and a
// DNS label (a sandbox's hostname) both fit.
const MaxNameLen = 63

// Slugify lowercases name, turns every run of characters outside [a-z0-9]
// into one dash and trims dashes at both ends, so any name a user or an
// agent gives becomes one git, the engine and a hostname accept. It returns
// an *InvalidNameError when the result is empty or longer than MaxNameLen,
// so its output is always a valid slug or an error.
func Slugify(name string) (string, error) {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	slug := b.String()
	if slug == "" || len(slug) > MaxNameLen {
		return "", &InvalidNameError{Name: name, Slug: slug}
	}
	return slug, nil
}

// InvalidNameError is a name whose slug is empty or too long.
type InvalidNameError struct {
	Name string
	Slug string
}

func (e *InvalidNameError) Error() string {
	why := "it has no letters or digits"
	if e.Slug != "" {
		why = fmt.Sprintf("its slug is %d characters long", len(e.Slug))
	}
	return fmt.Sprintf("Invalid sandbox name %s (%s). Slugified names must be 1-63 characters and contain only [a-z0-9-].", Quote(e.Name), why)
}

// Is makes errors.Is(err, ErrInvalidName) hold.
func (e *InvalidNameError) Is(target error) bool { return target == ErrInvalidName }

// repoSlug slugifies a repository's directory name for container names
// (litterbox-<repo>-<slug>). A name too long is cut to MaxNameLen; one with
// no letters or digits becomes "repo".
func repoSlug(base string) string {
	s, err := Slugify(base)
	if err == nil {
		return s
	}
	var ie *InvalidNameError
	if errors.As(err, &ie) && ie.Slug != "" {
		return strings.Trim(ie.Slug[:MaxNameLen], "-")
	}
	return "repo"
}
