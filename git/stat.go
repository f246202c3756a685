package git

import "context"

// Stat is how much a range of commits changes: files, lines added and
// deleted (binary files count as files only).
type Stat struct {
	Files   int `json:"files"`
	Added   int `json:"added"`
	Deleted int `json:"deleted"`
}

// NumStat measures the change from base to tip, each rename counted as a
// deletion and an addition (ListFiles' sums; no file kept).
func (g *Repo) NumStat(ctx context.Context, base, tip string) (Stat, error) {
	l, err := g.ListFiles(ctx, base, tip, 0, 0)
	if err != nil {
		return Stat{}, err
	}
	return Stat{Files: l.Total, Added: l.Added, Deleted: l.Deleted}, nil
}
