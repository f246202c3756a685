package e2e

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// The fidelity suite: git is the oracle of what a snapshot records. A
// sandbox gets random changes through `litterbox exec`, `litterbox
// snapshot` records them, and the branch's tree must equal what `git add
// -A` of the same /src gives on top of the branch's previous commit
// (gitAddTree). The changes are drawn from a seeded generator; the seed is
// printed, and LITTERBOX_FIDELITY_SEED=N reruns one.

type fidelity struct {
	ts      *testscript.TestScript
	rng     *rand.Rand
	dir     string
	sandbox string
	n       int // names made so far, to keep them unique
	// links are the names of files made with hard links, both names,
	// to write through in later rounds; ign tells whether the ignored
	// folder ign/ was made in an earlier round (a round links into it
	// only then: see docs/snapshots.md, "One limit").
	links []string
	ign   bool
}

// run runs a command in the repository with the script's environment and
// returns its stdout; a failure fails the script.
func (f *fidelity) run(stdin []byte, name string, args ...string) string {
	path := name
	for _, d := range filepath.SplitList(f.ts.Getenv("PATH")) {
		if p := filepath.Join(d, name); fileExists(p) {
			path = p
			break
		}
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = f.dir
	cmd.Env = append(scriptEnv(f.ts), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@t")
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		f.ts.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

func (f *fidelity) litterbox(stdin []byte, args ...string) string {
	return f.run(stdin, "litterbox", args...)
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// oddNames are the names the generator draws from: bytes that broke
// parsers before (blanks, newlines, CR, quotes, backslashes, dashes,
// glob characters, bytes that are not UTF-8) and plain ones.
var oddNames = []string{"a b", "t\tab", "n\nl", "c\rr", "\xff\xfe", "\x80x", "\xc3(", "ünï cødé", "-dash", "--x", `q"uo'te`, `back\slash`,
	"*star", "[br]ack", "#hash", "!bang", " lead", "trail ", "é", "e\u0301", "plain", "main.go", "README.md", "x.o", "y.log", "z.tmp", "a1", "B2"}

// ignorePatterns are .gitignore lines drawn by the generator, including
// negations, bracket classes, directory-only and anchored rules.
var ignorePatterns = []string{"*.o", "!keep.o", "*.log", "[!a]*.tmp", "[^b]1", "[]x]", "[[:digit:]]*", "**/cache/", "/rootonly", "d*/", "!d1/",
	"*.tmp ", "\\#hash", "\\!bang", "n?l", "*\xff*", "t[[:space:]]ab", "gen/**", "!gen/keep", "build/", "[a-c]1"}

func (f *fidelity) name() string {
	f.n++
	n := oddNames[f.rng.IntN(len(oddNames))]
	if f.rng.IntN(3) == 0 {
		return n
	}
	return fmt.Sprintf("%s%d", n, f.n)
}

// write writes a file of the generated tree on the host.
func (f *fidelity) write(rel string, data []byte, mode os.FileMode) {
	p := filepath.Join(f.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.ts.Fatalf("%v", err)
	}
	if err := os.WriteFile(p, data, mode); err != nil {
		f.ts.Fatalf("%v", err)
	}
}

func (f *fidelity) content() []byte {
	switch f.rng.IntN(8) {
	case 0: // binary
		b := make([]byte, f.rng.IntN(4096))
		for i := range b {
			b[i] = byte(f.rng.Uint32())
		}
		return b
	case 1: // large
		b := make([]byte, (1+f.rng.IntN(3))<<20)
		for i := 0; i < len(b); i += 8 {
			v := f.rng.Uint64()
			for j := 0; j < 8 && i+j < len(b); j++ {
				b[i+j] = byte(v >> (8 * j))
			}
		}
		return b
	case 2:
		return nil
	}
	return []byte(fmt.Sprintf("line %d\n", f.rng.IntN(1000)))
}

// generate writes the odd repository.
func (f *fidelity) generate() {
	var gi []string
	for i := 0; i < 6; i++ {
		gi = append(gi, ignorePatterns[f.rng.IntN(len(ignorePatterns))])
	}
	f.write(".gitignore", []byte("build/\nign/\n"+strings.Join(gi, "\n")+"\n"), 0o644)
	dirs := []string{"", "src", "src/deep", "d1", "d2", "n\nl", "\xff dir", "build", "build/sub", "gen"}
	for _, d := range dirs {
		for i := 0; i < 4; i++ {
			mode := os.FileMode(0o644)
			if f.rng.IntN(5) == 0 {
				mode = 0o755
			}
			// Numbered, so no file takes the name of a directory to come.
			f.n++
			f.write(filepath.Join(d, fmt.Sprintf("%s%d", oddNames[f.rng.IntN(len(oddNames))], f.n)), f.content(), mode)
		}
		if d != "" && f.rng.IntN(2) == 0 {
			f.write(filepath.Join(d, ".gitignore"), []byte(ignorePatterns[f.rng.IntN(len(ignorePatterns))]+"\n"+ignorePatterns[f.rng.IntN(len(ignorePatterns))]+"\n"), 0o644)
		}
	}
	for i := 0; i < 3; i++ {
		if err := os.Symlink(oddNames[f.rng.IntN(len(oddNames))], filepath.Join(f.dir, "src", fmt.Sprintf("link%d", i))); err != nil {
			f.ts.Fatalf("%v", err)
		}
	}
	os.MkdirAll(filepath.Join(f.dir, "empty", "dir"), 0o755)
}

// copyGoroot commits the Go distribution's source, a real large tree, as
// it is (a .gitignore inside it ignores nothing already tracked): one git fast-import writes it as one pack, much faster
// than git add of eleven thousand files.
func (f *fidelity) copyGoroot() {
	src := filepath.Join(strings.TrimSpace(f.run(nil, "go", "env", "GOROOT")), "src")
	f.run(nil, "git", "init", "-q")
	var in bytes.Buffer
	var paths []string
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		rel = "gosrc/" + rel
		mode := "100644"
		if fi.Mode()&0o111 != 0 {
			mode = "100755"
		}
		paths = append(paths, mode+" :"+strconv.Itoa(len(paths)+1)+" "+rel)
		fmt.Fprintf(&in, "blob\nmark :%d\ndata %d\n", len(paths), len(data))
		in.Write(data)
		in.WriteByte('\n')
		return nil
	})
	if err != nil {
		f.ts.Fatalf("read GOROOT: %v", err)
	}
	fmt.Fprintf(&in, "commit refs/heads/main\ncommitter T <t@t> 0 +0000\ndata 4\ninit\n")
	for _, p := range paths {
		fmt.Fprintf(&in, "M %s\n", p)
	}
	f.run(in.Bytes(), "git", "-c", "pack.compression=0", "fast-import", "--quiet")
	// No checkout: a sandbox is made from the commit, not the work tree.
}

// commit commits everything, forcing in what lies under ignored
// directories (build/), so the branch tracks files there.
func (f *fidelity) commit() {
	f.run(nil, "git", "init", "-q")
	// Uncompressed objects: the Go tree's 150 MB are written in a moment.
	f.run(nil, "git", "config", "core.compression", "0")
	f.run(nil, "git", "add", "-A")
	if fi, err := os.Stat(filepath.Join(f.dir, "build")); err == nil && fi.IsDir() {
		f.run(nil, "git", "add", "-f", "build")
	}
	f.run(nil, "git", "commit", "-qm", "init")
}

// shq writes a shell word that printf turns into s, byte for byte (a
// trailing newline survives: the word ends in "x", cut after).
func shq(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-', c == '/', c == ' ':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "\\%03o", c)
		}
	}
	return b.String()
}

// editExcludes now and then adds a line to the repository's info/exclude,
// or empties it: a rule change on the host that the next snapshot applies.
func (f *fidelity) editExcludes() string {
	p := filepath.Join(f.dir, ".git", "info", "exclude")
	switch f.rng.IntN(6) {
	case 0:
		os.WriteFile(p, nil, 0o644)
		return "empty info/exclude\n"
	case 1:
		pat := ignorePatterns[f.rng.IntN(len(ignorePatterns))]
		fh, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			f.ts.Fatalf("%v", err)
		}
		fmt.Fprintf(fh, "%s\n", pat)
		fh.Close()
		return fmt.Sprintf("info/exclude %q\n", pat)
	}
	return ""
}

// changes draws one round of changes: a shell script for the sandbox and a
// readable list of what it does.
func (f *fidelity) changes() (script, ops string) {
	files := strings.Split(strings.TrimSuffix(f.run(nil, "git", "ls-tree", "-r", "-z", "--name-only", "litterbox/"+f.sandbox), "\x00"), "\x00")
	dirs := map[string]bool{"": true}
	for _, p := range files {
		for d := filepath.Dir(p); d != "."; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	var dirList []string
	for d := range dirs {
		dirList = append(dirList, d)
	}
	sortStrings(dirList)
	pickFile := func() string { return files[f.rng.IntN(len(files))] }
	pickDir := func() string { return dirList[f.rng.IntN(len(dirList))] }
	var sh, log strings.Builder
	sh.WriteString("set -e\ncd /src\n")
	// ign/, an ignored folder nothing is tracked under, for links.
	linkDirs := append(slices.Clone(dirList), "build")
	if f.ign {
		linkDirs = append(linkDirs, "ign")
	} else {
		sh.WriteString("mkdir -p ign\n")
		f.ign = true
	}
	// let sets a shell variable to s, byte for byte; a path gets a
	// leading "./", so a name like "-dash" is never read as an option.
	let := func(v, s string) { fmt.Fprintf(&sh, "%s=$(printf '%sx'); %s=${%s%%x}\n", v, shq(s), v, v) }
	letPath := func(v, p string) { let(v, "./"+p) }
	join := func(d, n string) string {
		if d == "" {
			return n
		}
		return d + "/" + n
	}
	for i := 0; i < 4+f.rng.IntN(6); i++ {
		switch op := f.rng.IntN(16); {
		case op < 3 && len(files) > 0: // modify
			p := pickFile()
			letPath("p", p)
			fmt.Fprintf(&sh, "[ -f \"$p\" ] && [ ! -L \"$p\" ] && head -c %d /dev/urandom >> \"$p\" || true\n", 1+f.rng.IntN(5000))
			fmt.Fprintf(&log, "modify %q\n", p)
		case op == 3 && len(files) > 0: // chmod
			p := pickFile()
			letPath("p", p)
			sh.WriteString("[ -f \"$p\" ] && [ ! -L \"$p\" ] && { if [ -x \"$p\" ]; then chmod -x \"$p\"; else chmod +x \"$p\"; fi; } || true\n")
			fmt.Fprintf(&log, "chmod %q\n", p)
		case op == 4 && len(files) > 0: // delete
			p := pickFile()
			letPath("p", p)
			sh.WriteString("rm -rf \"$p\"\n")
			fmt.Fprintf(&log, "delete %q\n", p)
		case op == 5: // new file, maybe in a new directory
			d := pickDir()
			if f.rng.IntN(3) == 0 {
				d = join(d, f.name())
			}
			p := join(d, f.name())
			letPath("p", p)
			fmt.Fprintf(&sh, "mkdir -p \"$(dirname \"$p\")\" 2>/dev/null && [ ! -d \"$p\" ] && head -c %d /dev/urandom > \"$p\" || true\n", f.rng.IntN(3)*f.rng.IntN(1<<20))
			fmt.Fprintf(&log, "create %q\n", p)
		case op == 6: // symlink
			p := join(pickDir(), f.name())
			letPath("p", p)
			let("t", f.name())
			sh.WriteString("[ -d \"$(dirname \"$p\")\" ] && [ ! -e \"$p\" ] && ln -s -- \"$t\" \"$p\" || true\n")
			fmt.Fprintf(&log, "symlink %q\n", p)
		case op == 7 && len(dirList) > 1: // rename a directory
			d := pickDir()
			if d == "" {
				continue
			}
			to := join(filepath.Dir(d), f.name())
			if filepath.Dir(d) == "." {
				to = f.name()
			}
			letPath("p", d)
			letPath("t", to)
			sh.WriteString("[ -d \"$p\" ] && [ ! -e \"$t\" ] && mv \"$p\" \"$t\" || true\n")
			fmt.Fprintf(&log, "rename dir %q to %q\n", d, to)
		case op == 8: // empty directory
			p := join(pickDir(), f.name())
			letPath("p", p)
			sh.WriteString("mkdir -p \"$p\" 2>/dev/null || true\n")
			fmt.Fprintf(&log, "mkdir %q\n", p)
		case op == 9: // a .gitignore edit
			d := pickDir()
			letPath("p", join(d, ".gitignore"))
			if f.rng.IntN(4) == 0 {
				sh.WriteString("rm -f \"$p\" || true\n")
				fmt.Fprintf(&log, "delete %q\n", join(d, ".gitignore"))
			} else {
				pat := ignorePatterns[f.rng.IntN(len(ignorePatterns))]
				let("g", pat)
				sh.WriteString("[ -d \"$(dirname \"$p\")\" ] && printf '%s\\n' \"$g\" >> \"$p\" || true\n")
				fmt.Fprintf(&log, "ignore %q in %q\n", pat, d)
			}
		case op == 10: // ignored output, and a tracked file under an ignored directory
			letPath("p", "build/"+f.name())
			sh.WriteString("{ mkdir -p build && [ ! -d \"$p\" ] && echo out > \"$p\"; } 2>/dev/null || true\n")
			sh.WriteString("for t in build/*; do [ -f \"$t\" ] && [ ! -L \"$t\" ] && echo more >> \"$t\" && break; done || true\n")
			log.WriteString("write under build/\n")
		case op == 11 && len(files) > 0: // a file becomes a directory
			p := pickFile()
			letPath("p", p)
			sh.WriteString("[ -f \"$p\" ] && rm -f \"$p\" && mkdir \"$p\" && echo inner > \"$p/inner\" || true\n")
			fmt.Fprintf(&log, "file to dir %q\n", p)
		case op == 12 && len(files) > 0: // a hard link, anywhere, maybe written through at once, maybe removed again
			p := pickFile()
			t := join(linkDirs[f.rng.IntN(len(linkDirs))], f.name())
			letPath("p", p)
			letPath("t", t)
			then, what := "", ""
			switch f.rng.IntN(4) {
			case 0:
				then, what = fmt.Sprintf(" && head -c %d /dev/urandom >> \"$t\"", 1+f.rng.IntN(3000)), ", written through"
			case 1:
				then, what = fmt.Sprintf(" && head -c %d /dev/urandom >> \"$t\" && rm -f \"$t\"", 1+f.rng.IntN(3000)), ", written through, removed"
			}
			fmt.Fprintf(&sh, "[ -f \"$p\" ] && [ ! -L \"$p\" ] && [ -d \"$(dirname \"$t\")\" ] && [ ! -e \"$t\" ] && ln \"$p\" \"$t\"%s || true\n", then)
			if !strings.HasSuffix(what, "removed") {
				f.links = append(f.links, p, t)
			}
			fmt.Fprintf(&log, "hard link %q to %q%s\n", t, p, what)
		case (op == 13 || op == 14) && len(f.links) > 0: // a write or a chmod through a name of a linked file
			t := f.links[f.rng.IntN(len(f.links))]
			letPath("t", t)
			if f.rng.IntN(3) == 0 {
				sh.WriteString("[ -f \"$t\" ] && [ ! -L \"$t\" ] && { if [ -x \"$t\" ]; then chmod -x \"$t\"; else chmod +x \"$t\"; fi; } || true\n")
				fmt.Fprintf(&log, "chmod through %q\n", t)
			} else {
				fmt.Fprintf(&sh, "[ -f \"$t\" ] && [ ! -L \"$t\" ] && head -c %d /dev/urandom >> \"$t\" || true\n", 1+f.rng.IntN(3000))
				fmt.Fprintf(&log, "write through %q\n", t)
			}
		default: // content changed with the old times put back
			if len(files) == 0 {
				continue
			}
			p := pickFile()
			letPath("p", p)
			sh.WriteString("[ -f \"$p\" ] && [ ! -L \"$p\" ] && { t=$(mktemp); cp -p \"$p\" \"$t\"; echo sneaky >> \"$t\"; touch -r \"$p\" \"$t\"; cp -p \"$t\" \"$p\"; rm -f \"$t\"; } || true\n")
			fmt.Fprintf(&log, "sneaky edit %q\n", p)
		}
	}
	return sh.String(), log.String()
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// cmdFidelity is the script command fidelity (scriptcmds_test.go).
func cmdFidelity(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: fidelity generated|goroot SANDBOX ROUNDS")
	}
	rounds, err := strconv.Atoi(args[2])
	if err != nil {
		ts.Fatalf("rounds: %v", err)
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("LITTERBOX_FIDELITY_SEED"); s != "" {
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			ts.Fatalf("LITTERBOX_FIDELITY_SEED: %v", err)
		}
	}
	ts.Logf("fidelity %s: seed %d (rerun with LITTERBOX_FIDELITY_SEED=%d)", args[0], seed, seed)
	f := &fidelity{ts: ts, rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), dir: ts.MkAbs("."), sandbox: args[1]}
	start := time.Now()
	switch args[0] {
	case "generated":
		f.generate()
	case "goroot":
		f.copyGoroot()
	default:
		ts.Fatalf("usage: fidelity generated|goroot SANDBOX ROUNDS")
	}
	if args[0] == "generated" {
		f.commit()
	}
	f.litterbox(nil, "create", f.sandbox)
	// The sandbox's container, not its egress gateway (which carries
	// the sandbox's labels and dev.litterbox.gateway-of).
	var container string
	for _, line := range strings.Split(f.run(nil, "docker", "ps", "--no-trunc", "--filter", "label=dev.litterbox.slug="+f.sandbox, "--filter", "label="+ts.Getenv("LITTERBOX_LABELS"), "--format", `{{.ID}} {{.Label "dev.litterbox.gateway-of"}}`), "\n") {
		if id, gw, _ := strings.Cut(strings.TrimSpace(line), " "); id != "" && gw == "" {
			container = id
		}
	}
	if container == "" {
		ts.Fatalf("no container for sandbox %s", f.sandbox)
	}
	branch := "litterbox/" + f.sandbox
	oracle := &addOracle{repo: f.dir, scratch: f.dir + ".scratch", env: scriptEnv(ts)}
	defer oracle.close()
	ts.Logf("repository and sandbox ready in %.1f s", time.Since(start).Seconds())
	for round := 1; round <= rounds; round++ {
		start = time.Now()
		base := strings.TrimSpace(f.run(nil, "git", "rev-parse", branch))
		script, ops := f.changes()
		ops += f.editExcludes()
		f.litterbox([]byte(script), "exec", f.sandbox, "--", "sh", "-s")
		f.litterbox(nil, "snapshot", f.sandbox, "-m", fmt.Sprintf("fidelity round %d", round))
		want, got, diff, err := oracle.compare(container, branch, base)
		if err != nil {
			ts.Fatalf("round %d: %v", round, err)
		}
		if want != got {
			ts.Fatalf("round %d (seed %d): the branch (tree %s) is not what git add -A records (tree %s):\n%s\nchanges made:\n%s", round, seed, got, want, diff, ops)
		}
		ts.Logf("round %d: %d changes, tree %s matches git add -A (%.1f s)", round, strings.Count(ops, "\n"), got, time.Since(start).Seconds())
	}
}
