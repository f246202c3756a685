package e2e

// The scripts' own commands and conditions, one list each, every one with
// its usage and what it does (as cmd/go's scriptcmds.go lists its script
// engine's): a new command gets an entry here, its code goes in the file of
// its concern. A name listed twice fails TestScriptNamesUnique.

// scriptCmds are the commands the scripts may run besides testscript's own.
var scriptCmds = []scriptCommand{
	// tui start COLS ROWS CMD [ARGS...]
	//
	// Runs CMD in a terminal of COLS x ROWS: a tmux server of the script's
	// own (socket lb-$TESTID), started anew with the script's environment,
	// in the current directory. The server is killed when the script ends.
	//
	// tui wait [-within DURATION] REGEXP
	//
	// Waits up to 30 s for the screen (tmux capture-pane, one line a row)
	// to match REGEXP; with -within, fails when it took longer than
	// DURATION. On failure it prints the screen.
	//
	// tui keys KEY...
	//
	// Types the keys, as tmux send-keys names them (Enter, Escape, Tab, q),
	// pausing after an Escape.
	//
	// tui gone REGEXP
	//
	// Waits up to 30 s for the screen to stop matching REGEXP (a question
	// answered, a row removed).
	//
	// tui resize COLS ROWS
	//
	// Resizes the terminal, as a person dragging the window does.
	//
	// tui lastline REGEXP
	//
	// Fails unless the terminal's last row matches REGEXP: what is drawn
	// fits the height.
	//
	// tui screen
	//
	// Prints the screen to stdout.
	//
	// [!] tui plain
	//
	// Fails unless the screen holds text only: no colour or other
	// attribute (tmux capture-pane -e shows none).
	//
	// [!] tui pane FORMAT REGEXP
	//
	// Fails unless tmux's FORMAT of the pane (#{pane_title},
	// #{alternate_on}) matches REGEXP (with !, unless it does not): what
	// the program did to the terminal beyond its text.
	//
	// tui exited
	//
	// Waits up to 30 s for the program to exit, and fails unless it
	// exited 0.
	{"tui", cmdTUI},
	// buildlitterbox cgo|static DIR
	// builds this module's litterbox into DIR/litterbox with cgo on or off
	// (a plain `go build`, as `go install` does), and fails unless the
	// binary is dynamically linked (cgo) or static: a test of a cgo build
	// on a machine without a C compiler would prove nothing.
	{"buildlitterbox", cmdBuildLitterbox},
	// loadimage NAME OS/ARCH
	// loads an image named NAME whose metadata says OS/ARCH, holding one
	// file (/hello), offline (docker load of a docker-save archive). It is
	// removed when the script ends.
	{"loadimage", cmdLoadImage},
	// mcprss [-max MIB]
	//
	// Prints the peak resident size (VmHWM) of the script's `litterbox mcp`
	// process so far, as "peak rss: N MiB"; with -max it fails when the
	// peak passed MIB mebibytes.
	{"mcprss", cmdMCPRSS},
	// gobuildstatic DIR OUT
	//
	// Builds the Go main package in DIR (a module of its own, the standard
	// library only) into OUT, static (CGO_ENABLED=0), with the test's own
	// Go environment: a stand-in program for a container, such as a
	// scanner an agent rewrote.
	{"gobuildstatic", cmdGoBuildStatic},
	// dirsize DIR MAXMIB
	//
	// Prints the size of the files under DIR ("size: N MiB") and fails when
	// it is over MAXMIB mebibytes.
	{"dirsize", cmdDirSize},
	// hostserve
	//
	// Serves HTTP on the host, on every address (0.0.0.0) at a port the
	// kernel picks, for the rest of the script: every answer is "hello from
	// the host". It sets HOSTADDR to the host's address on the engine's
	// default bridge (docker0), where a container reaches the host, and
	// HOSTPORT to the port: a host service a sandbox must not reach unless the
	// user allows it.
	{"hostserve", cmdHostServe},
	// testinternet
	//
	// Makes the egress tests' own internet (internal/egresstest: a network
	// namespace joined to this one by a veth pair, its servers on
	// 198.18.N.0/24, a range the gateway takes as public) for the rest of
	// the script, and sets INETADDR to its web server's address, which
	// answers "hello from ADDR" on port 80: a host out there a sandbox may
	// reach once the user allows it. It needs root (ip netns). With
	// -goproxy N its web server is also a Go module proxy at GOPROXYURL
	// (http://INETADDR/goproxy) of N generated modules, example.test/m01 and
	// on, each request it answers a line of $WORK/goproxy.log, and
	// $WORK/go.mod.proxy is a go.mod requiring them all.
	{"testinternet", cmdTestInternet},
	// otlpcollector FILE
	//
	// Starts an OTLP/HTTP logs receiver (activity/otlp/otlptest: each
	// request decoded strictly with OpenTelemetry's own definitions) and
	// sets $OTLPURL to it; it appends each record it takes to FILE, one
	// line each (otlptest.Line), and each request's body to FILE.raw. A
	// request that does not decode is a line "undecodable: ERROR" in FILE
	// (its body in FILE.raw too). It stops when the script ends.
	{"otlpcollector", cmdOTLPCollector},
	// faults OP KILLS [ENGINE]
	// runs KILLS rounds of OP (create, snapshot, delete, merge (a
	// fast-forward), merge-true (with a merge commit) or apply) where
	// litterbox is killed, then ENGINE rounds where the engine fails, in
	// the repository of the current directory, which must have a commit.
	{"faults", cmdFaults},
	// fidelity generated|goroot SANDBOX ROUNDS
	// generated: writes a repository of odd names (non-UTF-8 too), modes,
	// symlinks, empty directories, nested .gitignore files with negations
	// and bracket classes, files tracked under ignored directories, large
	// and binary files, into the current directory and commits it;
	// goroot: copies $(go env GOROOT)/src there. Then creates SANDBOX and
	// runs ROUNDS rounds of random changes (hard links among them, made
	// anywhere, ignored folders too, and written through either name),
	// each checked against git add -A.
	{"fidelity", cmdFidelity},
	// standin HARNESS TURNS
	//
	// Starts the stand-in model API for the script, serving the tool calls
	// of the file TURNS (LABEL TOOL {ARGS} a line, the tool named as the
	// harness names it; see standin.ParseTurns), then a closing text. It sets
	// $STANDIN_URL to its root and $HARNESS to the cached executable of
	// HARNESS, and records every request in $WORK/standin.jsonl. It stops
	// when the script ends.
	{"standin", cmdStandin},
	// modelsaw [LABEL]
	//
	// Prints what the harness gave the model as the result of the call
	// LABEL, from the stand-in's record. With no LABEL it prints the report:
	// one line per call, its label, tool and the start of what the model
	// saw, then the requests the stand-in refused (the harness reaching for
	// the network); it fails if a call had no result.
	{"modelsaw", cmdModelSaw},
	// readme-snippet HARNESS FILE
	//
	// Writes the configuration snippet for HARNESS of docs/connect.md (the
	// code block marked <!-- harness: HARNESS; ... -->) to FILE, as a user
	// copies it.
	{"readme-snippet", cmdReadmeSnippet},
	// kubectl ARGS...
	//
	// Runs the cluster's kubectl with ARGS against the script's cluster and
	// namespace (LITTERBOX_KUBECONFIG, LITTERBOX_NAMESPACE); its output is kept
	// for stdout and stderr. `! kubectl` expects it to fail.
	{"kubectl", cmdKubectl},
	// lbexit CODE ARGS...
	//
	// Runs `litterbox ARGS...` and fails unless it exits with exactly CODE. Its
	// stdout and stderr are kept for the stdout and stderr commands. `! lbexit`
	// is not allowed: give the code instead.
	{"lbexit", cmdLBExit},
	// dockershim MODE
	//
	// Puts a docker stand-in first on PATH that breaks one step of create (MODE:
	// image, copy, setup, pause, killcopy, killrun, sigintnet, netrmfail or
	// netrmlost), or puts a sandbox's own stream in place of a copy out's
	// (cpout), or kills or slows the process that finishes a delete
	// (killfinish, slowfinish, failfinish; see shimScript), and passes every other command to
	// the real docker. `dockershim absent` leaves only litterbox and git on
	// PATH, so there is no docker CLI at all. `dockershim off` undoes either.
	{"dockershim", cmdDockerShim},
	// leftovers
	//
	// Fails when any container, network or volume carrying this script's label
	// ($LITTERBOX_LABELS) exists 30 s on (what a delete removes after it
	// returned goes meanwhile). `! leftovers` fails when none does, at once.
	{"leftovers", cmdLeftovers},
	// waitgone PATTERN...
	//
	// Waits up to 30 s until no file matches any PATTERN (a path, or a glob
	// such as .git/litterbox/pool.d/*.claim): what a delete removes after
	// it returned, in the background (the sandbox's state, a pool claim).
	{"waitgone", cmdWaitGone},
	// waitfor [-not] REGEXP PROG [ARGS...]
	//
	// Runs PROG ARGS as exec does (litterbox, or a program on the script's
	// PATH) every 200 ms until it exits 0 with a stdout that matches REGEXP
	// (with -not, that does not; ^ and $ at each line, as the stdout
	// command matches), for at most 30 s: a state that another
	// process brings about in its own time. Its last stdout and stderr are
	// kept for the stdout and stderr commands.
	{"waitfor", cmdWaitFor},
	// mcp [-text] [-field NAME -out FILE] TOOL JSONARGS
	//
	// Calls TOOL through a real stdio MCP client talking to `litterbox mcp`,
	// started in the current directory on the script's first call and
	// stopped when the script ends (its stderr goes to $WORK/mcp.stderr).
	// In JSONARGS a key ending in "@" takes its value from the named file
	// ({"content@":"data.txt"} sends data.txt as content). On success the
	// structured result is printed to stdout as indented JSON, or the text
	// fallback with -text; -field NAME -out FILE writes the string field
	// NAME of the result to FILE instead. A tool error (isError) prints its
	// message to stderr and fails unless negated.
	{"mcp", cmdMCP},
	// mcpbg [-progress] [flags of mcp] NAME TOOL JSONARGS
	//
	// Starts a call of TOOL in the background on the script's client, as
	// NAME; with -progress it asks for progress notifications.
	{"mcpbg", cmdMCPBg},
	// mcpwait NAME
	//
	// Waits for the background call NAME and prints its outcome as mcp
	// would, with the flags it was started with; "progress: N" on stderr
	// counts the progress notifications it received.
	{"mcpwait", cmdMCPWait},
	// mcpcancel NAME
	//
	// Cancels the background call NAME as a client does: the call's context
	// ends and the client sends notifications/cancelled. Fails if the call
	// had already returned. Prints "progress: N" as mcpwait does.
	{"mcpcancel", cmdMCPCancel},
	// mcpnoreply NAME
	//
	// Asserts that the server sent no response to the background call NAME
	// (in the traffic traced so far).
	{"mcpnoreply", cmdMCPNoReply},
	// mcpuntil TOOL JSONARGS REGEXP
	//
	// Calls TOOL every 200 ms until the text of its result matches REGEXP,
	// for at most 2 minutes.
	{"mcpuntil", cmdMCPUntil},
	// mcpreadall SANDBOX PATH FILE
	//
	// Reads PATH with read, page after page (offset and limit as the results
	// say), and writes the pages joined to FILE; prints the number of pages.
	{"mcpreadall", cmdMCPReadAll},
	// repeat FILE N TEXT
	//
	// Writes TEXT N times to FILE.
	{"repeat", cmdRepeat},
	// mcpfresh
	//
	// Starts a new `litterbox mcp` for the script's next calls, with the
	// environment as it is now (the previous one is closed at the end).
	{"mcpfresh", cmdMCPFresh},
	// tssdk
	//
	// Installs the official TypeScript MCP SDK (tsSDKVersion) with npm into
	// the user's cache directory, outside the clone, once, and sets SDK to
	// its package folder for scripts run with node.
	{"tssdk", cmdTSSDK},
	// waitfile FILE REGEXP
	//
	// Waits up to 2 minutes for FILE to exist and match REGEXP.
	{"waitfile", cmdWaitFile},
	// mcpwriters PROCS WRITES SANDBOX
	// starts PROCS `litterbox mcp` processes at once, each writing WRITES
	// distinct files wP-I.txt to SANDBOX, and fails if any call fails.
	{"mcpwriters", cmdMCPWriters},
	// genfile FILE SIZE
	//
	// Writes SIZE bytes of awkward text to FILE: shell quotes, $(...),
	// backticks, control characters, CRLF and LF line ends, multi-byte
	// UTF-8, and no newline at the end.
	{"genfile", cmdGenFile},
	// mcpmany NAME N TOOL JSONARGS
	//
	// Starts N calls of TOOL in the background on the script's client, as
	// the group NAME, with {I} in JSONARGS replaced by each call's number (1
	// to N). It returns once the server's stdin has received all N, so the
	// calls of a later mcpmany reach the server after these.
	{"mcpmany", cmdMCPMany},
	// mcpmanycancel NAME
	//
	// Cancels every call of the group NAME as a client does (its context
	// ends and the client sends notifications/cancelled). Fails if any of
	// them had returned already.
	{"mcpmanycancel", cmdMCPManyCancel},
	// mcpmanywait NAME
	//
	// Waits (at most 5 minutes) for every call of the group NAME and prints
	// how many answered and how many of those were tool errors; for a
	// cancelled group, how many got a response in the traffic so far. The
	// slowest answer's time is printed to stderr.
	{"mcpmanywait", cmdMCPManyWait},
	// mcpwithin SECONDS TOOL [JSONARGS]
	//
	// Calls TOOL (TOOL ping sends a ping) and fails unless it answers,
	// without a tool error, within SECONDS. Prints the time it took to
	// stderr.
	{"mcpwithin", cmdMCPWithin},
	// peakrss [-count] MAXMIB PROG ARGS...
	//
	// Runs PROG ARGS... (litterbox, or another program on the script's
	// PATH) in the script's directory and environment, as exec does, and
	// fails unless its peak resident size stays at or under MAXMIB MiB:
	// its VmHWM, read from /proc every 10 ms while it runs, which counts
	// the process itself and not its children (kubectl's 50 MB; getrusage's
	// ru_maxrss counts the largest of them). Prints "peak RSS: N MiB in S s"
	// to stderr. Its stdout and stderr become the script's, and a non-zero
	// exit fails unless negated; with -count they are counted, not kept
	// (it may write gigabytes): it prints "exit N, stdout N bytes, stderr
	// N bytes, peak N MiB" to stdout and the last KiB of its stderr to
	// stderr, whatever the exit.
	{"peakrss", cmdPeakRSS},
	// mcppeak MIB
	//
	// Prints the peak resident memory (VmHWM) of the script's `litterbox
	// mcp` process, in MiB, and fails when it is over MIB.
	{"mcppeak", cmdMCPPeak},
	// gitaddmatch CONTAINER BRANCH BASE
	// asserts that BRANCH's tree is what git itself records of the
	// container's /src: /src is tarred out into a scratch work tree, a
	// scratch index is loaded with BASE's tree (the commit the snapshot
	// started from, so files tracked there stay tracked), then `git add -A`
	// and `git write-tree` run against the script's repository, with its own
	// info/exclude and core.excludesFile. On a difference it prints what git
	// would have recorded differently.
	{"gitaddmatch", cmdGitAddMatch},
	// snap NAME DIR MESSAGE
	//
	// Commits the files under DIR, as the whole tree (.gitignore honoured), on
	// top of litterbox/NAME in the repository of the current directory, the way
	// a snapshot does: a private index, write-tree, commit-tree and a
	// compare-and-swap update-ref. No hooks run and nothing is signed. It stands
	// in for the snapshot engine so review can be tested on its own.
	{"snap", cmdSnap},
	// gitshim MODE
	//
	// Puts a git stand-in first on PATH that kills litterbox at one step of
	// merge or apply, or moves a sandbox's branch during a merge (MODE:
	// killref, killafterref, killapply or moveref; see
	// gitShimScript). `gitshim off` removes it.
	{"gitshim", cmdGitShim},
	// envfile VAR FILE
	//
	// Sets VAR to FILE's first line (a commit id a command printed), so later
	// commands can pass it.
	{"envfile", cmdEnvFile},
	// standin-tls HARNESS TURNS
	//
	// Starts the stand-in model API as standin does, but over HTTPS on
	// every address of the host, with a certificate for the host's
	// address on the engine's default bridge (docker0), where a sandbox's
	// gateway reaches it; its CA is $WORK/standin-ca.pem. It sets
	// $STANDIN_URL (https://ADDR:PORT), $STANDIN_HOST (ADDR:PORT, an
	// egress entry) and $HARNESS.
	{"standin-tls", cmdStandinTLS},
	// standin-keys
	//
	// Prints the API keys the stand-in received, one a line.
	{"standin-keys", cmdStandinKeys},
	// gateway-evidence NAME
	//
	// When the script fails, logs what the egress gateway of sandbox NAME
	// saw (litterbox net log NAME) and the gateway's own log, before the
	// script's sandboxes are removed: a harness that failed in a sandbox
	// leaves the gateway's side of its connections.
	{"gateway-evidence", cmdGatewayEvidence},
	// tlsserve TOKEN
	//
	// Serves HTTPS on the host, on every address (0.0.0.0) at a port the
	// kernel picks, for the rest of the script: an API that wants TOKEN as
	// "Authorization: Bearer TOKEN" and answers "hello octocat" (or 401 "bad
	// credentials"), then "you sent: " and the Authorization it got, so an
	// answer reflects the credential. Its certificate is for the host's
	// address on the engine's default bridge (docker0), signed by a CA of its
	// own, written to $WORK/tls-ca.pem. It sets TLSADDR to that address and
	// TLSPORT to the port.
	//
	// tlsserve -netns NAME TOKEN ADDR...
	//
	// The same, served in the network namespace /run/netns/NAME instead (the
	// test cluster's stand-in of what lies outside it, litterbox-k8s-ext,
	// where a gateway pod reaches it; root only), on all its addresses, with
	// a certificate for ADDRs; TLSADDR is the first.
	{"tlsserve", cmdTLSServe},
	// httpget URL
	//
	// GETs URL from the host and prints the body on stdout. It retries for up to
	// 15 s until an answer with status 2xx arrives (a service may still be
	// starting). Negated, it expects no 2xx answer within 2 s. busybox's wget is
	// not used: it crashed on requests here.
	{"httpget", cmdHTTPGet},
	// porturl VAR PORTNAME
	//
	// Reads the stdout of the previous `litterbox ports NAME --json` and sets VAR
	// to the host URL of the named port.
	{"porturl", cmdPortURL},
	// fanout N CMD ARGS...
	//
	// Runs CMD ARGS N times at once (at most 6 at a time), with every %d in ARGS
	// replaced by 1..N, in the script's directory and environment. It fails,
	// showing their output, when any run fails. Use it for many sandboxes:
	// `fanout 20 litterbox create many-%d`.
	{"fanout", cmdFanout},
	// distinctports N NAMEFMT PORTNAME
	//
	// For the sandboxes NAMEFMT with %d replaced by 1..N, asks `litterbox ports
	// --json` for the host URL of PORTNAME, checks that no two share a host port,
	// and fetches each URL, expecting the body to contain that sandbox's name.
	{"distinctports", cmdDistinctPorts},
	// snapmatch CONTAINER BRANCH [EXCLUDE...]
	// asserts that the tree of BRANCH equals /src of CONTAINER, file by file:
	// type, executable bit, content hash or link target. Paths equal to or
	// under an EXCLUDE prefix (ignored files) are left out of /src's side.
	{"snapmatch", cmdSnapMatch},
	// crashloop N CMD ARGS...
	// starts CMD N times and kills it with SIGKILL after a growing delay,
	// to cut snapshots short at different points.
	{"crashloop", cmdCrashloop},
	// hang PROG | off | gone
	//
	// `hang PROG` puts first on PATH a PROG (docker or git) that hangs on every
	// call. `hang off` takes it away. `hang gone` fails unless the stand-in ran
	// and none of the processes it started is still alive (a zombie waiting for
	// its reaper counts as gone: it was killed).
	{"hang", cmdHang},
	// trailers RANGE
	//
	// Prints every commit of RANGE (git rev-list RANGE, newest first) as
	// "commit SUBJECT", then each trailer `git interpret-trailers --parse`
	// finds in its message, indented by two spaces.
	{"trailers", cmdTrailers},
}

// scriptConds are the conditions the scripts may test ([name] and [!name]);
// a condition not listed fails the script.
var scriptConds = []scriptCondition{
	// tmux: tmux is on PATH. In CI (CI=true) a missing tmux fails the
	// script instead of skipping it: the UI's test must run there
	// (scripts/ensure-tmux.sh installs it).
	{"tmux", condTmux},
	// arm64engine: the engine can run arm64Image (scripts/ensure-arm64.sh
	// ran). In CI its absence fails the script: .ci/run runs that script.
	{"arm64engine", condARM64Engine},
	// debianimage: the engine holds debianImage. In CI (CI=true) a missing
	// image fails the script instead of skipping it: .ci/run makes it.
	{"debianimage", condDebianImage},
	// nodeimage: the engine holds nodeImage. In CI a missing image fails
	// the script: .ci/run makes it.
	{"nodeimage", condNodeImage},
	// goimage: the engine holds goImage (scripts/ensure-go-image.sh). In CI
	// a missing image fails the script: .ci/run makes it.
	{"goimage", condGoImage},
	// docker: an engine answers. In CI (CI=true) a missing engine fails the
	// script instead of skipping it: the Docker tests must run there.
	{"docker", condDocker},
	// node: node and npm are on PATH, for the TypeScript SDK's script. In
	// CI a missing node fails the script: it must run there.
	{"node", condNode},
	// sshengine: the ssh engine answers over ssh. In CI (CI=true) a missing
	// one fails the script: .ci/run brings it up.
	{"sshengine", condSSHEngine},
	// openengine: the engine with its firewall off answers on its socket.
	{"openengine", condOpenEngine},
	// gvisor: the Docker engine offers the runtime runsc (gVisor), as
	// scripts/ensure-gvisor.sh registers it. In CI a Docker engine without
	// it fails the script instead of skipping it.
	{"gvisor", condGvisor},
	// k8sgvisor: the test cluster (scripts/ensure-kubernetes.sh) has the
	// RuntimeClass gvisor. In CI a cluster without it fails the script
	// instead of skipping it.
	{"k8sgvisor", condKubernetesGvisor},
	// debiantools: the engine holds toolsImage. In CI (CI=true) a missing
	// image fails the script instead of skipping it.
	{"debiantools", condDebianTools},
	// vm: the VM engine can run here (vm.Runnable: the image of
	// scripts/ensure-vm-image.sh and qemu-system-x86_64; emulated without
	// a usable /dev/kvm, as the engine runs). With CI=true their absence fails
	// the script.
	{"vm", condVM},
}

// harnessConds are the conditions harness:NAME, one for each harness:
// harness:NAME: the harness is cached (scripts/ensure-harnesses.sh).
// In CI (CI=true) a missing one fails the script instead of
// skipping it: the harness tests must run there.
func harnessConds() []scriptCondition {
	var conds []scriptCondition
	for _, name := range harnesses {
		conds = append(conds, scriptCondition{"harness:" + name, condHarness(name)})
	}
	return conds
}
