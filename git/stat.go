package git

import (
	"context"
	"strconv"
	"strings"
)

// Stat is how much a range of commits changes: files, lines added and
// deleted (binary files count as files only).
type Stat struct {
	Files   int `json:"files"`
	Added   int `json:"added"`
	Deleted int `json:"deleted"`
}

// NumStat measures the change from base to tip (git diff --numstat), each
// rename counted as a deletion and an addition.
func (g *Repo) NumStat(ctx context.Context, base, tip string) (Stat, error) {
	res, err := g.R.Run(ctx, g.Cmd("diff", "--numstat", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", "--end-of-options", base, tip, "--"))
	if err != nil {
		return Stat{}, err
	}
	return ParseNumStat(string(res.Stdout)), nil
}

// ParseNumStat parses `git diff --numstat -z --no-renames`: "ADDED\tDELETED\tPATH\0"
// per file, "-" for the counts of a binary file.
func ParseNumStat(out string) Stat {
	var s Stat
	for _, rec := range strings.Split(out, "\x00") {
		added, rest, ok := strings.Cut(rec, "\t")
		if !ok {
			continue
		}
		deleted, _, ok := strings.Cut(rest, "\t")
		if !ok {
			continue
		}
		s.Files++
		a, _ := strconv.Atoi(added)
		d, _ := strconv.Atoi(deleted)
		s.Added += a
		s.Deleted += d
	}
	return s
}
