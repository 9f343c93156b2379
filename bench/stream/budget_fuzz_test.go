package stream

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// countReader counts what is read of r.
type countReader struct {
	r io.Reader
	n *int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.n += int64(n)
	return n, err
}

// knownClasses are the classes a stream that came back 200 may fail with.
var knownClasses = map[string]bool{"malformed": true, "stream_error": true, "cut": true, "long": true,
	"body_too_large": true, "truncated_body": true}

// fuzzClient reads FuzzStreamBudget's streams.
var fuzzClient = New("http://vllm.invalid")

// FuzzStreamBudget reads one fuzzed 200 stream as Client.Do does, asking maxTokens (1–64) under a byte
// cap of 64 B–4 KiB: the request must end (the input is finite), never read
// past its cap, never pass with more output than asked (by text chunks,
// the running count or the final usage) or without [DONE], and fail only
// with a class of its own (never "other"). Inputs stay small (≤ 4 KiB), so
// the fuzzer spends its time on shapes:
//
//	go test ./bench/stream -run '^$' -fuzz '^FuzzStreamBudget$' -fuzztime 60s -fuzzminimizetime 200x
func FuzzStreamBudget(f *testing.F) {
	f.Add([]byte(strings.Join(genStream(3, 4), "")), uint8(4), uint8(255))
	f.Add([]byte(strings.Join(genStream(3, 9), "")), uint8(4), uint8(255))
	f.Add([]byte(sse(roleChunk(5))+sse(tokenChunk("content", "t ", 5, 1, ""))+": ping\n\n"+sse(tokenChunk("reasoning", "r", 5, 2, ""))), uint8(1), uint8(3))
	f.Add([]byte(sse(`{"choices":[{"index":0,"delta":{"content":"`+strings.Repeat("x", 300)+`"}}]}`)+sse(usageChunk(1, 99))+sse(done)), uint8(2), uint8(0))
	f.Add([]byte(":"+strings.Repeat("x", 900)+"\n"), uint8(8), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, asked, capSel uint8) {
		if len(data) > 4<<10 {
			t.Skip("long inputs add no shapes")
		}
		maxTokens := 1 + int(asked%64)
		limit := int64(64 + int(capSel)*16)
		// What Do reads a 200 stream with, without the HTTP round trip
		// (TestHostileStreamsEndBounded goes through Do): the byte cap,
		// the stall watch and the collector's max_tokens.
		var read int64
		res := &Result{}
		w := &watches{stall: newWatch(0, nil), deadline: newWatch(0, nil), maxTokens: maxTokens}
		fuzzClient.read(t.Context(), w, &boundedReader{r: &countReader{bytes.NewReader(data), &read}, w: w.stall, max: limit}, res, nil)
		if read > limit+1 {
			t.Fatalf("read %d bytes past the cap %d", read, limit)
		}
		if res.Err != nil {
			if class := ErrorClass(res.Err); !knownClasses[class] {
				t.Fatalf("class %q for %v", class, res.Err)
			}
			return
		}
		switch {
		case !res.Done:
			t.Fatal("passed without [DONE]")
		case res.Chunks > maxTokens:
			t.Fatalf("passed with %d text chunks, asked %d", res.Chunks, maxTokens)
		case res.OutputTokens > maxTokens:
			t.Fatalf("passed with %d output tokens, asked %d", res.OutputTokens, maxTokens)
		case int64(len(res.Content)+len(res.Reasoning)) > read:
			t.Fatal("more text than bytes read")
		}
	})
}
