package activity

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/litterbox-dev/litterbox/internal/termtext"
)

// What an event shows on one line: agent text is escaped (termtext) and
// shortened; Detail shows all of it.

// maxShown is the most runes of one field a one-line summary shows.
const maxShown = 100

// Line is an event on one line, as `litterbox watch` prints it: the local
// time, the sandbox and the summary.
func Line(e Event) string {
	return e.Time.Local().Format("15:04:05") + "  " + termtext.Escape(e.Sandbox) + "  " + Summary(e)
}

// Summary is what happened, on one line, escaped: "bash go test ./...
// exit 1 2.3s -> 3f2a1b9c0d1e (2 files)": its What and its Outcome.
func Summary(e Event) string { return What(e) + Outcome(e) }

// What is what the event did, escaped: "bash  go test ./...".
func What(e Event) string {
	var b strings.Builder
	word := func(s string) {
		if s == "" {
			return
		}
		if b.Len() > 0 {
			b.WriteString("  ")
		}
		b.WriteString(s)
	}
	switch e.Kind {
	case KindCall:
		word(short(e.Tool))
		word(short(e.Args))
	case KindService:
		word("service " + short(e.Service) + " " + short(e.Action))
	case KindMilestone:
		word("milestone")
		if e.Message != "" {
			word(`"` + short(e.Message) + `"`)
		}
	case KindFork:
		word("forked to " + short(e.Target))
	case KindMerge:
		word("merged")
		if e.Target != "" {
			word("into " + short(e.Target))
		}
	case KindApply:
		word("applied to the working tree")
	case KindRewind:
		word("rewound")
		if e.Target != "" {
			word("to " + short(e.Target))
		}
	case KindExec:
		word("exec")
		word(short(e.Args))
		if e.Action == "start" {
			word("started")
		}
	case KindSnapshot:
		word("snapshot")
	case KindNet:
		word("network: " + short(e.Action) + " " + short(e.Target))
	case KindEgress:
		word("refused connection to " + short(e.Target))
	case KindPause:
		word("paused")
	case KindResume:
		word("resumed")
	case KindCreate:
		word("created")
		word(short(e.Message))
	case KindDelete:
		word("deleted")
	case KindUnkept:
		what := "failed operations"
		if e.Action == ClassEgress {
			what = "refused connections and policy changes"
		}
		word(fmt.Sprintf("… %d more %s not kept aside: the store that keeps them past rotation was full", e.Missed, what))
		return b.String()
	case KindBroken:
		word(fmt.Sprintf("! the record is broken at event %d: %s (litterbox audit verify %s checks all of it)", e.Seq, e.Message, termtext.Escape(e.Sandbox)))
		return b.String()
	case KindMissed:
		word(fmt.Sprintf("… %d event%s not shown here: rotated away from the record, or past the newest this view keeps", e.Missed, plural(int(e.Missed))))
		return b.String()
	default:
		// A kind this build does not know (a newer litterbox wrote it):
		// its message, once.
		word(short(string(e.Kind)))
		word(short(e.Message))
		return b.String()
	}
	if e.Kind != KindCall && e.Kind != KindCreate && e.Kind != KindExec && e.Kind != KindMilestone && e.Kind != KindPause && e.Kind != KindResume && e.Kind != KindDelete && e.Message != "" {
		word(`"` + short(e.Message) + `"`)
	}
	return b.String()
}

// Outcome is how it ended, and who acted when it was not an agent's call:
// "  exit 1  2.3s  -> 3f2a1b9c0d1e (2 files)", "  (by cli)".
func Outcome(e Event) string {
	var parts []string
	switch {
	case e.Error != "":
		first, _, _ := strings.Cut(e.Error, "\n")
		parts = append(parts, "failed: "+short(first))
	case e.Exit != nil:
		parts = append(parts, fmt.Sprintf("exit %d", *e.Exit))
	}
	if e.TimedOut {
		parts = append(parts, "timed out")
	}
	if e.Cancelled {
		parts = append(parts, "cancelled")
	}
	if e.Ms > 0 || e.Kind == KindCall {
		parts = append(parts, Duration(time.Duration(e.Ms)*time.Millisecond))
	}
	if e.Commit != "" {
		c := "-> " + ShortID(e.Commit)
		if n := len(e.Files) + e.FilesMore; n > 0 {
			c += fmt.Sprintf(" (%d file%s)", n, plural(n))
		}
		parts = append(parts, c)
	}
	if e.Kind != KindCall && e.By != "" {
		parts = append(parts, "(by "+short(e.By)+")")
	}
	if len(parts) == 0 {
		return ""
	}
	return "  " + strings.Join(parts, "  ")
}

// Verdict is how it ended in a word or two, when it did not simply
// succeed: "  exit 1", "  failed: ...", "  timed out", "  cancelled"; "" for a
// success. For where Outcome does not fit.
func Verdict(e Event) string {
	var parts []string
	switch {
	case e.Error != "":
		parts = append(parts, "failed")
	case e.Exit != nil && *e.Exit != 0:
		parts = append(parts, fmt.Sprintf("exit %d", *e.Exit))
	}
	if e.TimedOut {
		parts = append(parts, "timed out")
	}
	if e.Cancelled {
		parts = append(parts, "cancelled")
	}
	if len(parts) == 0 {
		return ""
	}
	return "  " + strings.Join(parts, "  ")
}

// Detail is every field of an event, one a line, multi-line text kept and
// escaped: what the UI shows when an event is opened.
func Detail(e Event) string {
	var b strings.Builder
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%-9s %s\n", k, v)
		}
	}
	block := func(k, v string) {
		if v == "" {
			return
		}
		fmt.Fprintf(&b, "%s:\n", k)
		for _, l := range strings.Split(strings.TrimRight(termtext.EscapeText(v), "\n"), "\n") {
			b.WriteString("  " + termtext.ExpandTabs(l) + "\n")
		}
	}
	if e.Kind == KindUnkept || e.Kind == KindBroken {
		return What(e) + "\n"
	}
	if e.Kind == KindMissed {
		fmt.Fprintf(&b, "%d event%s of %s, numbers %d to %d, are not shown: the record rotated them away\n"+
			"(it keeps its newest %s, and the refused connections and failed operations\n"+
			"before them aside), or they came while this reader was behind.\n",
			e.Missed, plural(int(e.Missed)), termtext.Escape(e.Sandbox), e.Seq, e.Seq+e.Missed-1, Size(2*DefaultMaxBytes))
		return b.String()
	}
	row("time", e.Time.Local().Format("2006-01-02 15:04:05.000 MST"))
	row("sandbox", termtext.Escape(e.Sandbox))
	if e.Seq > 0 {
		row("number", fmt.Sprint(e.Seq))
	}
	row("kind", termtext.Escape(string(e.Kind)))
	by := termtext.Escape(e.By)
	if e.PID != 0 {
		by += fmt.Sprintf(" (pid %d)", e.PID)
	}
	row("by", strings.TrimSpace(by))
	row("tool", termtext.Escape(e.Tool))
	row("service", termtext.Escape(e.Service))
	row("action", termtext.Escape(e.Action))
	row("target", termtext.Escape(e.Target))
	if e.Exit != nil {
		row("exit", fmt.Sprint(*e.Exit))
	}
	if !e.Start.IsZero() {
		row("started", e.Start.Local().Format("15:04:05.000"))
	}
	if e.Ms > 0 {
		row("took", Duration(time.Duration(e.Ms)*time.Millisecond))
	}
	if e.TimedOut {
		row("timed out", "yes: killed")
	}
	if e.Cancelled {
		row("cancelled", "yes: by the client")
	}
	row("commit", termtext.Escape(e.Commit))
	if len(e.Files) > 0 {
		files := make([]string, len(e.Files))
		for i, f := range e.Files {
			files[i] = termtext.Quote(f)
		}
		s := strings.Join(files, ", ")
		if e.FilesMore > 0 {
			s += fmt.Sprintf(" and %d more", e.FilesMore)
		}
		row("files", s)
	}
	block("args", e.Args)
	block("message", e.Message)
	block("output", e.Output)
	block("error", e.Error)
	if len(e.Cut) > 0 {
		var cuts []string
		for _, k := range slices.Sorted(maps.Keys(e.Cut)) {
			cuts = append(cuts, fmt.Sprintf("%s was %s, its start and end kept", termtext.Escape(k), Size(e.Cut[k])))
		}
		row("cut", strings.Join(cuts, "; "))
	}
	return b.String()
}

// short is s escaped on one line and shortened to maxShown runes: its
// start and its end, so padding in front hides nothing at the end.
func short(s string) string {
	s = termtext.Escape(s)
	if utf8.RuneCountInString(s) <= maxShown {
		return s
	}
	r := []rune(s)
	head := maxShown * 3 / 5
	return string(r[:head]) + "…" + string(r[len(r)-(maxShown-head-1):])
}

// ShortID is a commit id shortened for display.
func ShortID(id string) string {
	id = termtext.Escape(id)
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// Duration is d as people read it: 45ms, 2.3s, 4m05s, 3h02m.
func Duration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// Ago is how long ago t was, shortly: 5s, 3m, 2h, 4d.
func Ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := max(now.Sub(t), 0)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// Size is n bytes as people read it.
func Size(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
