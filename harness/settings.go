package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"
)

// `litterbox run --with-config` copies the harness's settings file from the
// user's home into the sandbox's, never its credentials: those live in
// other files (Claude Code's .credentials.json, Codex's auth.json, Gemini
// CLI's oauth_creds.json, opencode's auth.json), which are never read, and
// a settings file that holds one (a key, a token, a helper that prints
// one) is refused: the model's key is a secret the gateway holds.

// ErrSettings is a settings file --with-config cannot copy.
var ErrSettings = errors.New("--with-config")

// maxSettings bounds a settings file: it travels in the command line of
// the run (one argument holds at most 128 KiB).
const maxSettings = 64 << 10

// credentialKey is a key whose string value is taken for a credential.
var credentialKey = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(api[-_]?key|token|secret|passw(or)?d|credential|authorization|bearer|cookie)`)
})

// UserSettings is h's settings file in home (h.Settings), as the run
// writes it into the sandbox's home: refused when missing, larger than 64
// KiB, not of its format, or holding what looks like a credential. A JSON
// file has h.Home's entry for the same file merged over it (what the run
// needs of it wins).
func (h *Harness) UserSettings(home string) ([]byte, error) {
	if h.Settings == "" {
		return nil, fmt.Errorf("%w: %s has no settings file litterbox knows", ErrSettings, h.Name)
	}
	name := filepath.Join(home, h.Settings)
	shown := "~/" + h.Settings
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v (run without --with-config to start from a fresh home)", ErrSettings, shown, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSettings+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrSettings, shown, err)
	}
	if len(data) > maxSettings {
		return nil, fmt.Errorf("%w: %s is larger than %d KiB, which no settings file is", ErrSettings, shown, maxSettings>>10)
	}
	var doc map[string]any
	if strings.HasSuffix(h.Settings, ".toml") {
		err = toml.Unmarshal(data, &doc)
	} else {
		err = json.Unmarshal(data, &doc)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s cannot be read: %v", ErrSettings, shown, err)
	}
	if where := credentialIn(doc, ""); where != "" {
		return nil, fmt.Errorf("%w: %s holds what looks like a credential (%s), and litterbox copies no credential into a sandbox (the model's key is a secret its gateway holds, docs/run.md): take it out of the file, or run without --with-config", ErrSettings, shown, where)
	}
	ours, ok := h.Home[h.Settings]
	if !ok {
		return data, nil
	}
	var over map[string]any
	if err := json.Unmarshal([]byte(ours), &over); err != nil {
		return nil, err
	}
	return json.Marshal(mergeOver(doc, over))
}

// credentialIn is the key path of the first string value under a key that
// names a credential, "" for none.
func credentialIn(v any, at string) string {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := strings.TrimPrefix(at+"."+k, ".")
			if s, ok := v[k].(string); ok && s != "" && credentialKey().MatchString(k) {
				return p
			}
			if w := credentialIn(v[k], p); w != "" {
				return w
			}
		}
	case []any:
		for i, e := range v {
			if w := credentialIn(e, fmt.Sprintf("%s[%d]", at, i)); w != "" {
				return w
			}
		}
	}
	return ""
}

// mergeOver is base with over's entries, objects merged key by key.
func mergeOver(base, over map[string]any) map[string]any {
	for k, ov := range over {
		bm, bok := base[k].(map[string]any)
		om, ook := ov.(map[string]any)
		if bok && ook {
			base[k] = mergeOver(bm, om)
		} else {
			base[k] = ov
		}
	}
	return base
}

// writeFile is the shell that writes data to $HOME/rel, its folder made.
func writeFile(rel string, data []byte) string {
	return fmt.Sprintf(`mkdir -p "$HOME/%s" && printf '%%s' %s > "$HOME/%s"`, path.Dir(rel), shellQuote(string(data)), rel)
}
