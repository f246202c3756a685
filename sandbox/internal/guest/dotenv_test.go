package guest

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/secrets"
)

func TestDotenvSecrets(t *testing.T) {
	files := []git.ArchiveFile{
		{Path: ".env", Data: []byte("STRIPE_KEY=sk-live-0123456789\nPORT=3000\nNAME='long enough value'\nEMPTY=\n")},
		{Path: "app/.env.local", Data: []byte("STRIPE_KEY=sk-test-0123456789\n")},
		{Path: "notes.txt", Data: []byte("STRIPE_KEY=sk-live-0123456789\n")},
	}
	marked := config.Dotenv{Keys: map[string][]string{"STRIPE_KEY": {"api.stripe.com"}}, Where: ".litterbox.local.toml:3"}
	ds, short, err := DotenvSecrets("/repo", marked, files)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 || len(short) != 0 {
		t.Fatalf("got %+v, short %v; want one secret per dotenv file", ds, short)
	}
	if ds[0].Name != "dotenv-env-stripe_key" || ds[1].Name != "dotenv-app-env-local-stripe_key" {
		t.Errorf("names %q, %q", ds[0].Name, ds[1].Name)
	}
	if s := ds[1].Source; s.Kind != secrets.SourceDotenv || s.Ref != filepath.FromSlash("/repo/app/.env.local") || s.Var != "STRIPE_KEY" {
		t.Errorf("source %+v", s)
	}
	all := config.Dotenv{All: true, AllHosts: []string{"api.example.com"}, Keys: map[string][]string{}}
	ds, short, err = DotenvSecrets("/repo", all, files[:1])
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 || ds[1].Name != "dotenv-env-name" || len(short) != 1 || short[0] != ".env:PORT" {
		t.Errorf("placeholders mode: %+v, short %v; want STRIPE_KEY and NAME, PORT short, EMPTY left", ds, short)
	}
	// a key marked by name that cannot be a secret is refused
	for _, data := range []string{"PORT=3000\n", "PORT=\"open\nmore\"\n"} {
		_, _, err := DotenvSecrets("/repo", config.Dotenv{Keys: map[string][]string{"PORT": {"a.example"}}}, []git.ArchiveFile{{Path: ".env", Data: []byte(data)}})
		if !errors.Is(err, api.ErrConfig) {
			t.Errorf("%q: err %v, want ErrConfig", data, err)
		}
	}
}

func TestPlacehold(t *testing.T) {
	files := []git.ArchiveFile{
		{Path: ".env", Data: []byte("STRIPE_KEY=\"sk-live-0123456789\" # live\nPORT=3000\n")},
		{Path: "README", Data: []byte("hello\n")},
	}
	bs := []secrets.Binding{{Name: "dotenv-env-stripe_key", Placeholder: "PH", File: filepath.FromSlash("/repo/.env"), Key: "STRIPE_KEY"}}
	out, err := Placehold("/repo", files, bs)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out[0].Data); got != "STRIPE_KEY=\"PH\" # live\nPORT=3000\n" {
		t.Errorf(".env = %q", got)
	}
	if string(files[0].Data) == string(out[0].Data) {
		t.Error("Placehold changed its input")
	}
	// the value anywhere else copied in refuses the copy
	files = append(files, git.ArchiveFile{Path: "config.local", Data: []byte("key: sk-live-0123456789\n")})
	if _, err := Placehold("/repo", files, bs); err == nil || !strings.Contains(err.Error(), `"config.local"`) {
		t.Errorf("err %v, want the file that holds the value named", err)
	}
}
