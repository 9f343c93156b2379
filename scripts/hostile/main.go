// hostilesrv is a vLLM-shaped server whose chat streams misbehave:
// -mode endless (a token every 10 ms, no finish, no [DONE]), ping (": ping"
// every 100 ms), flood (4 KB content chunks as fast as read).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18111", "listen address")
	mode := flag.String("mode", "endless", "endless, ping or flood")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"fake","object":"model","root":"org/fake","max_model_len":1048576}]}`)
	})
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `{"version":"0.0.0-hostile"}`)
	})
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"count":1,"max_model_len":1048576,"tokens":[1]}`)
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var b struct {
			MaxTokens int `json:"max_tokens"`
		}
		_ = json.NewDecoder(r.Body).Decode(&b)
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.WriteHeader(200)
		fl := w.(http.Flusher)
		send := func(s string) bool {
			if _, err := io.WriteString(w, s); err != nil {
				return false
			}
			fl.Flush()
			return r.Context().Err() == nil
		}
		chunk := func(text string, k int) string {
			t, _ := json.Marshal(text)
			return fmt.Sprintf("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%s},\"finish_reason\":null}],\"usage\":{\"prompt_tokens\":100,\"total_tokens\":%d,\"completion_tokens\":%d}}\n\n", t, 100+k, k)
		}
		if !send(chunk("", 0)) {
			return
		}
		big := strings.Repeat("x", 4<<10)
		for k := 1; ; k++ {
			switch *mode {
			case "endless":
				time.Sleep(10 * time.Millisecond)
				if !send(chunk(fmt.Sprintf("w%d ", k), k)) {
					return
				}
			case "ping":
				time.Sleep(100 * time.Millisecond)
				if !send(": ping\n\n") {
					return
				}
			case "flood":
				if !send(chunk(big, k)) {
					return
				}
			}
		}
	})
	log.Fatal(http.ListenAndServe(*addr, mux))
}
