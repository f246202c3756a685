package core

import (
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// EnvOptions are the service's options from the environment, which main
// reads once (sandbox.EnvOptions), where it makes the service; no concern
// reads the environment itself.
//
//	LITTERBOX_IMAGE                   the default image (Image)
//	LITTERBOX_LABELS                  extra labels, key=value,key=value (ExtraLabels)
//	LITTERBOX_SCANNER                 a scanner to copy in instead of the embedded one (Scanner)
//	LITTERBOX_JOURNAL=off             every scan walks the whole tree (NoJournal)
//	LITTERBOX_SNAPSHOT_MAX_FILE_SIZE  the largest file a snapshot records, in bytes (MaxFileSize)
//	LITTERBOX_CACHE_DIR               where the isolation check keeps its verdicts (CacheDir)
//
// LITTERBOX_ALLOW_UNISOLATED is the --allow-unisolated flag's, which main
// sets.
func EnvOptions() api.Options {
	return api.Options{
		Image:       os.Getenv("LITTERBOX_IMAGE"),
		ExtraLabels: parseLabels(os.Getenv("LITTERBOX_LABELS")),
		Scanner:     os.Getenv("LITTERBOX_SCANNER"),
		NoJournal:   os.Getenv("LITTERBOX_JOURNAL") == "off",
		MaxFileSize: positive(os.Getenv("LITTERBOX_SNAPSHOT_MAX_FILE_SIZE")),
		CacheDir:    os.Getenv("LITTERBOX_CACHE_DIR"),
		// LITTERBOX_POOL_REFILL_RATE: pooled sandboxes a process makes per
		// second at most once it made 16 (docs/pool.md).
		PoolRefillRate: positiveRate(os.Getenv("LITTERBOX_POOL_REFILL_RATE")),
	}
}

// positiveRate reads a positive number of things per second; 0 (the
// default) for anything else.
func positiveRate(v string) float64 {
	if r, err := strconv.ParseFloat(v, 64); err == nil && r > 0 && !math.IsInf(r, 1) {
		return r
	}
	return 0
}

func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && k != "" {
			out[k] = v
		}
	}
	return out
}

// positive reads a positive number; 0 (the default) for anything else.
func positive(v string) int64 {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
		return n
	}
	return 0
}
