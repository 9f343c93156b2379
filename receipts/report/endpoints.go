package report

import (
	"strconv"

	"github.com/vetbench/vetbench/receipts"
)

// endpointsSection lists, for every point spread over several endpoints,
// each endpoint's share: judgments, judgments/s, prefix-cache hit rate,
// requests as the client and the endpoint's counters saw them, and its
// reconciliation; and the total row those add up to. No section when no
// point had several endpoints (every receipt before them included).
func (b *builder) endpointsSection() (Section, bool) {
	t := Table{Caption: "Points spread over several endpoints: each endpoint's share and the total", CSV: "endpoints.csv",
		Header: []string{"run", "point", "endpoint", "judgments", "judgments/s", "prefix hit", "requests (client)", "requests (server)", "reconciliation"}}
	for _, r := range b.runs() {
		for _, p := range r.Entries {
			rec := p.Receipt
			if len(rec.Endpoints) == 0 {
				continue
			}
			point := p.Key().String()
			for _, e := range rec.Endpoints {
				t.Rows = append(t.Rows, endpointRow(r.Label, point, e.Endpoint, e.Throughput, e.Server, e.Reconciliation))
			}
			var rc *receipts.Reconciliation
			if rec.Checks != nil {
				rc = rec.Checks.Reconciliation
			}
			t.Rows = append(t.Rows, endpointRow(r.Label, point, "total", rec.Throughput, rec.Server, rc))
		}
	}
	if len(t.Rows) == 0 {
		return Section{}, false
	}
	return Section{ID: "endpoints", Title: "Endpoints", Tables: []Table{t},
		Notes: []string{"Each endpoint's rates are over the window's whole wall time, so they add up to the total; the total hit rate is all endpoints' hits over their queries."}}, true
}

func endpointRow(run, point, name string, tp receipts.Throughput, srv *receipts.Server, rc *receipts.Reconciliation) []Cell {
	var hitRate *float64
	server := Cell{Text: "—"}
	if srv != nil {
		hitRate = srv.PrefixCacheHitRate
		if v, ok := srv.Counters["request_success"]; ok {
			server = Cell{Text: strconv.FormatFloat(v, 'f', 0, 64)}
		}
	}
	recon := Cell{Text: "—"}
	if rc != nil {
		recon = Cell{Text: rc.Verdict, Tone: OK, Tip: rc.Detail}
		if !rc.OK {
			recon.Tone = Warn
		}
	}
	return []Cell{{Text: run}, {Text: point}, {Text: name}, itoa(tp.Judgments), f2(tp.JudgmentsPerSecond), ratio(hitRate), itoa(tp.Requests), server, recon}
}
