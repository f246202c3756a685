package guest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/internal/dotenv"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/secrets"
)

// The values of the dotenv files the bootstrap copies in (.env, .env.*)
// that the user marks ([bootstrap] dotenv_secrets, or dotenv =
// "placeholders": config.Dotenv) are secrets (docs/secrets.md), one per
// file and key, whose source is the file itself (secrets.SourceDotenv):
// create binds them as it binds the declared ones, the sandbox's copy of
// the file holds their placeholders (Placehold), and the gateway adds the
// values on the way to the hosts each is bound to. No second path: what
// the gateway gets, when, and how a restart re-arms it are the secrets'.

// DotenvSecrets are the secrets the marked values of the dotenv files of
// files (read from the working tree at root) are, and the keys whose
// values are copied as they are although dotenv = "placeholders" marks
// them: shorter than a secret may be (control.MinSecretValue: the answers
// are scrubbed of a value, and a short one would be found where it is no
// secret). A key marked by name whose value cannot be a secret (short,
// on several lines) is refused: the user asked for it.
func DotenvSecrets(root string, d config.Dotenv, files []git.ArchiveFile) (ds []secrets.Declaration, short []string, err error) {
	if !d.Marks() {
		return nil, nil, nil
	}
	names := map[string]bool{}
	for _, f := range files {
		if !dotenv.Is(f.Path) {
			continue
		}
		seen := map[string]bool{}
		for _, e := range dotenv.Parse(f.Data) {
			hosts, marked := d.Hosts(e.Key)
			_, byName := d.Keys[e.Key]
			switch {
			case !marked || seen[e.Key]:
				continue
			case e.Open && byName:
				return nil, nil, dotenvRefused(d, "the value of %s in %s (line %d) is on several lines, which litterbox does not read: write it on one line, or do not mark it", e.Key, api.Quote(f.Path), e.Line)
			case e.Open:
				return nil, nil, dotenvRefused(d, "the value of %s in %s (line %d) is on several lines, which litterbox does not read, and dotenv = %q would have it a placeholder: write it on one line, or list the keys to mark in dotenv_secrets instead", e.Key, api.Quote(f.Path), e.Line, config.DotenvPlaceholders)
			case e.Value == "":
				continue
			case len(e.Value) < control.MinSecretValue && byName:
				return nil, nil, dotenvRefused(d, "the value of %s in %s is shorter than %d bytes, too short to be a secret (the gateway scrubs answers of a secret's value): do not mark it", e.Key, api.Quote(f.Path), control.MinSecretValue)
			case len(e.Value) < control.MinSecretValue:
				short = append(short, f.Path+":"+e.Key)
				continue
			}
			seen[e.Key] = true
			name := dotenvName(f.Path, e.Key, names)
			names[name] = true
			ds = append(ds, secrets.Declaration{Name: name, Hosts: hosts, Where: d.Where,
				Source: secrets.Source{Kind: secrets.SourceDotenv, Ref: filepath.Join(root, filepath.FromSlash(f.Path)), Var: e.Key}})
		}
	}
	return ds, short, nil
}

func dotenvRefused(d config.Dotenv, format string, args ...any) error {
	return core.NewError(api.ErrConfig, "%s (marked in %s). Nothing was made.", fmt.Sprintf(format, args...), d.Where)
}

var notName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^a-z0-9_]+`) })

// dotenvName is the secret's name of key in the dotenv file at p:
// dotenv-FILE-KEY (".env.local", "STRIPE_KEY": dotenv-env-local-stripe_key),
// a hash of both when that is taken (keys that differ in case only) or too
// long. It is in the placeholder, where it says what it stands for.
func dotenvName(p, key string, taken map[string]bool) string {
	part := func(s string) string { return strings.Trim(notName().ReplaceAllString(strings.ToLower(s), "-"), "-") }
	name := "dotenv-" + part(p) + "-" + part(key)
	if len(name) <= 64 && !taken[name] {
		return name
	}
	sum := sha256.Sum256([]byte(p + "\x00" + key))
	return "dotenv-" + hex.EncodeToString(sum[:8])
}

// Placehold is files with the value of each dotenv file's key that bs
// binds (the sandbox's bindings, of which those of files read from the
// working tree at root) replaced by its placeholder. A bound value found
// anywhere else in files (another key, another file, copied as it is)
// refuses the copy: the value must never enter the sandbox.
func Placehold(root string, files []git.ArchiveFile, bs []secrets.Binding) ([]git.ArchiveFile, error) {
	var values []string
	out := slices.Clone(files)
	for i, f := range out {
		if !dotenv.Is(f.Path) {
			continue
		}
		abs := filepath.Join(root, filepath.FromSlash(f.Path))
		var es []dotenv.Entry
		var with []string
		for _, e := range dotenv.Parse(f.Data) {
			j := slices.IndexFunc(bs, func(b secrets.Binding) bool { return b.File == abs && b.Key == e.Key })
			if j < 0 || e.Open || e.Value == "" {
				continue
			}
			es, with = append(es, e), append(with, bs[j].Placeholder)
			values = append(values, e.Value)
		}
		if len(es) > 0 {
			out[i].Data = dotenv.Replace(f.Data, es, with)
		}
	}
	for _, v := range values {
		for _, f := range out {
			if bytes.Contains(f.Data, []byte(v)) {
				return nil, core.NewError(api.ErrConfig, "A value of a dotenv file marked as a secret is also in %s, which would be copied into the sandbox as it is: mark that key as well in [bootstrap] dotenv_secrets of %s, or take the file out of what is copied in. Nothing was made.", api.Quote(f.Path), config.LocalFile)
			}
		}
	}
	return out, nil
}
