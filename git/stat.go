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
// deletion and an addition (DiffFiles, summed).
func (g *Repo) NumStat(ctx context.Context, base, tip string) (Stat, error) {
	files, err := g.DiffFiles(ctx, base, tip)
	if err != nil {
		return Stat{}, err
	}
	s := Stat{Files: len(files)}
	for _, f := range files {
		s.Added += f.Added
		s.Deleted += f.Deleted
	}
	return s, nil
}
