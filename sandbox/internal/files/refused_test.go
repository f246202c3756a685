package files

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
)

// gatewayCtl stands for a gateway's `litterbox-gateway ctl`: it notes the
// arguments of each exec and answers with records.
type gatewayCtl struct {
	provider.Provider
	asked   [][]string
	records []control.Record
}

func (g *gatewayCtl) Exec(ctx context.Context, req provider.ExecRequest) (provider.ExecResult, error) {
	g.asked = append(g.asked, req.Cmd[2:])
	out, err := json.Marshal(g.records)
	return provider.ExecResult{Stdout: out}, err
}

// TestRefusedChoosesWhatToAsk: a bash call reports the hosts its command
// was refused, from what its run read when it could, else from the
// gateway asked after the mark the run found (whatever the two clocks
// say), else from the gateway asked for the call's length, without the
// refusals of an earlier call.
func TestRefusedChoosesWhatToAsk(t *testing.T) {
	start := time.Now()
	line := func(r control.Record) string {
		b, _ := json.Marshal(r)
		return string(b) + "\n"
	}
	mine := control.Record{Kind: "connect", Host: "mine.example", Port: 443, Reason: "not allowed", Time: start.Add(time.Second)}
	// earlier is timed before the call: an earlier call's refusal when
	// the gateway is asked for a window, but this call's, on a gateway
	// whose clock is behind, when it is asked after the run's mark.
	earlier := control.Record{Kind: "connect", Host: "earlier.example", Port: 443, Reason: "not allowed", Time: start.Add(-time.Minute)}
	cut := control.Record{Kind: control.KindCut}
	for _, tc := range []struct {
		name    string
		run     api.RunResult
		gateway []control.Record
		ask     string // the ctl's arguments, "" for none
		want    string
	}{
		{"read by the run", api.RunResult{RefusalsRead: true, Refusals: line(mine), RefusalsBoot: "b1", RefusalsAfter: 7},
			[]control.Record{earlier}, "", "mine.example:443 (not allowed)"},
		{"read, but the gateway emptied its file", api.RunResult{RefusalsRead: true, Refusals: line(cut), RefusalsBoot: "b1", RefusalsAfter: 7},
			[]control.Record{mine}, "refused -boot b1 -after 7", "mine.example:443 (not allowed)"},
		{"not read, marked", api.RunResult{RefusalsBoot: "b1", RefusalsAfter: 7},
			[]control.Record{earlier, mine}, "refused -boot b1 -after 7", "earlier.example:443 (not allowed),mine.example:443 (not allowed)"},
		{"no mark", api.RunResult{},
			[]control.Record{earlier, mine}, "refused -within", "mine.example:443 (not allowed)"},
		{"a mark that is not a gateway's", api.RunResult{RefusalsBoot: "not-hex", RefusalsAfter: 7},
			[]control.Record{earlier, mine}, "refused -within", "mine.example:443 (not allowed)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := &gatewayCtl{records: tc.gateway}
			c := &core.Common{Provider: gw, Log: log.New(io.Discard)}
			f := &Files{Common: c, gate: netgate.New(c)}
			got := f.refused(context.Background(), &api.Handle{Slug: "s"}, &netgate.NetFile{Gateway: "gw"}, &tc.run, start)
			if strings.Join(got, ",") != tc.want {
				t.Errorf("refused hosts %q, want %q", got, tc.want)
			}
			var asked []string
			for _, a := range gw.asked {
				asked = append(asked, strings.Join(a, " "))
			}
			if tc.ask == "" && len(asked) > 0 || tc.ask != "" && (len(asked) != 1 || !strings.HasPrefix(asked[0], tc.ask)) {
				t.Errorf("asked the gateway %q, want %q", asked, tc.ask)
			}
		})
	}
}
