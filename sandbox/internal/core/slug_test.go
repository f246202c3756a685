package core

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/sandbox/api"
)

func TestSlugify(t *testing.T) {
	s63 := strings.Repeat("a", 63)
	tests := []struct {
		name string
		want string // empty: *InvalidNameError
	}{
		{"My Feature Name!@#", "my-feature-name"},
		{"my-new-feature", "my-new-feature"},
		{"x", "x"},
		{"UPPER", "upper"},
		{"a--b", "a-b"},
		{"--a--", "a"},
		{"a_b.c/d e", "a-b-c-d-e"},
		{"  spaced   out  ", "spaced-out"},
		{"feature/login#42", "feature-login-42"},
		{"123", "123"},
		{"Café Crème", "caf-cr-me"}, // non-ASCII letters are not [a-z0-9]
		{"日本語 name", "name"},
		{"ÅNGSTRÖM", "ngstr-m"},
		{s63, s63},
		{"!" + s63 + "!", s63},
		{strings.Repeat("ab-", 21), strings.Repeat("ab-", 20) + "ab"}, // 62 after trim
		{"", ""},
		{"!!!", ""},
		{"---", ""},
		{"日本語", ""},
		{s63 + "a", ""}, // 64
		{strings.Repeat("a-", 32), strings.Repeat("a-", 31) + "a"}, // 63 once the dash is trimmed
		{strings.Repeat("a-", 32) + "b", ""},                       // 65
	}
	for _, tt := range tests {
		got, err := api.Slugify(tt.name)
		if tt.want == "" {
			var ie *api.InvalidNameError
			if !errors.As(err, &ie) || !errors.Is(err, api.ErrInvalidName) {
				t.Errorf("Slugify(%q) = %q, %v; want an *InvalidNameError", tt.name, got, err)
			}
			if got != "" {
				t.Errorf("Slugify(%q) returned %q with its error", tt.name, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Slugify(%q) = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

func TestInvalidNameMessage(t *testing.T) {
	for _, tt := range []struct{ name, want string }{
		{"", `Invalid sandbox name "" (it has no letters or digits). Slugified names must be 1-63 characters and contain only [a-z0-9-].`},
		{"!!!", `Invalid sandbox name "!!!" (it has no letters or digits).`},
		{strings.Repeat("x", 64), "(its slug is 64 characters long)"},
	} {
		_, err := api.Slugify(tt.name)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Slugify(%q) error = %v; want it to contain %q", tt.name, err, tt.want)
		}
	}
}

func TestRepoSlug(t *testing.T) {
	for _, tt := range []struct{ base, want string }{
		{"my-repo", "my-repo"},
		{"My Repo", "my-repo"},
		{"litterbox", "litterbox"},
		{"!!!", "repo"},
		{"日本語", "repo"},
		{strings.Repeat("r", 70), strings.Repeat("r", 63)},
		{strings.Repeat("r", 62) + "-x" + strings.Repeat("y", 10), strings.Repeat("r", 62)},
	} {
		got := repoSlug(tt.base)
		if got != tt.want {
			t.Errorf("repoSlug(%q) = %q, want %q", tt.base, got, tt.want)
		}
		if !validSlug.MatchString(got) {
			t.Errorf("repoSlug(%q) = %q, not a valid slug", tt.base, got)
		}
	}
}

func TestContainerName(t *testing.T) {
	// Repository my-repo and sandbox my-feature.
	r := &api.Repo{Slug: repoSlug("my-repo")}
	if got := r.ContainerName("my-feature"); got != "litterbox-my-repo-my-feature" {
		t.Errorf("ContainerName = %q", got)
	}
	if got := api.BranchRef("my-feature"); got != "refs/heads/litterbox/my-feature" {
		t.Errorf("BranchRef = %q", got)
	}
}

// validSlug is a slug's length and shape: 1-63 of [a-z0-9-], no leading,
// trailing or double dash.
var validSlug = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// FuzzSlugify checks that Slugify's output is always a valid slug, or else an
// *InvalidNameError, and that slugifying a slug changes nothing.
func FuzzSlugify(f *testing.F) {
	for _, s := range []string{"My Feature Name!@#", "", "!!!", "a--b", strings.Repeat("a", 64), "日本語 name", "-x-", "\x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got, err := api.Slugify(name)
		if err != nil {
			var ie *api.InvalidNameError
			if !errors.As(err, &ie) {
				t.Fatalf("Slugify(%q) error %T %v; want *InvalidNameError", name, err, err)
			}
			if got != "" {
				t.Fatalf("Slugify(%q) returned %q with an error", name, got)
			}
			return
		}
		if len(got) < 1 || len(got) > api.MaxNameLen || !validSlug.MatchString(got) {
			t.Fatalf("Slugify(%q) = %q, not a valid slug", name, got)
		}
		if again, err := api.Slugify(got); err != nil || again != got {
			t.Fatalf("Slugify(%q) = %q, %v; a slug must be its own slug", got, again, err)
		}
	})
}
