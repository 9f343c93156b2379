package receipts

import "net/url"

// validateEndpoints checks the per-endpoint block of a window spread over
// several endpoints: no credentials, finite figures, and counts that add
// up to the totals (every judgment went to exactly one endpoint).
func (r *Receipt) validateEndpoints(p *Problems) {
	if len(r.Endpoints) == 0 {
		return
	}
	var judgments, requests, failed, discarded, tokens int
	for i, e := range r.Endpoints {
		path := joinIndex("endpoints", i)
		if e.Endpoint == "" {
			p.Add(path+".endpoint", "empty")
		} else if u, err := url.Parse(e.Endpoint); err == nil && u.User != nil {
			p.Add(path+".endpoint", "holds credentials; receipts never do")
		}
		t := e.Throughput
		for _, f := range []struct {
			name string
			v    float64
		}{{"wall_seconds", t.WallSeconds}, {"judgments_per_second", t.JudgmentsPerSecond}, {"images_per_second", t.ImagesPerSecond}} {
			if bad(f.v) || f.v < 0 {
				p.Add(path+".throughput."+f.name, "%v is not a finite number >= 0", f.v)
			}
		}
		if s := e.Server; s != nil {
			for _, h := range []struct {
				name string
				v    *float64
			}{{"prefix_cache_hit_rate", s.PrefixCacheHitRate}, {"mm_cache_hit_rate", s.MMCacheHitRate}} {
				if h.v != nil && (bad(*h.v) || *h.v < 0 || *h.v > 1) {
					p.Add(path+".server."+h.name, "%v is outside [0,1]", *h.v)
				}
			}
		}
		judgments += t.Judgments
		requests += t.Requests
		failed += t.Failed
		discarded += t.Discarded
		tokens += t.PromptTokens
	}
	t := r.Throughput
	for _, c := range []struct {
		name       string
		sum, total int
	}{{"judgments", judgments, t.Judgments}, {"requests", requests, t.Requests}, {"failed", failed, t.Failed},
		{"discarded", discarded, t.Discarded}, {"prompt_tokens", tokens, t.PromptTokens}} {
		if c.sum != c.total {
			p.Add("endpoints", "the endpoints' %s add up to %d, the total is %d", c.name, c.sum, c.total)
		}
	}
}
