package stub

import (
	"fmt"
	"net/http"
	"strings"
)

// samplingError is what vLLM rejects once the request parsed: the
// SamplingParams checks of vllm/sampling_params.py (_verify_args when the
// chat request becomes sampling parameters, _validate_logprobs in the
// engine's input processor), each a VLLMValidationError: HTTP 400
// BadRequestError with the parameter named, its str() ending in
// " (parameter=…, value=…)".
func (s *Server) samplingError(req *chatRequest, topK int) *apiError {
	if t := req.Temperature; t != nil {
		switch {
		case *t < 0:
			return badRequest("temperature", "temperature must be non-negative, got %s. (parameter=temperature, value=%s)", pyFloat(*t), pyFloat(*t))
		case *t > 2:
			return badRequest("temperature", "temperature must be in [0, 2], got %s. (parameter=temperature, value=%s)", pyFloat(*t), pyFloat(*t))
		}
	}
	if len(req.LogprobTokenIDs) == 0 && req.logprobs() && topK != 0 {
		// top_logprobs becomes SamplingParams.logprobs only without
		// logprob_token_ids (to_sampling_params); -1 is the whole vocabulary.
		n := topK
		if n == -1 {
			n = VocabSize
		}
		if lim := s.cfg.Profile.MaxLogprobs; lim >= 0 && n > lim {
			return badRequest("logprobs", "Requested sample logprobs of %d, which is greater than max allowed: %d (parameter=logprobs, value=%d)", n, lim, n)
		}
	}
	if n := len(req.LogprobTokenIDs); n > MaxLogprobTokenIDs {
		return badRequest("logprob_token_ids", "Requested logprob_token_ids of length %d, which is greater than max allowed: %d (parameter=logprob_token_ids, value=%d)", n, MaxLogprobTokenIDs, n)
	}
	var bad []string
	for _, id := range req.LogprobTokenIDs {
		if id < 0 || id >= VocabSize {
			bad = append(bad, fmt.Sprint(id))
		}
	}
	if len(bad) > 0 {
		list := "[" + strings.Join(bad, ", ") + "]"
		return badRequest("logprob_token_ids", "token_id(s) %s in logprob_token_ids contain out-of-vocab token ids. Vocabulary size: %d (parameter=logprob_token_ids, value=%s)", list, VocabSize, list)
	}
	return nil
}

// ping is SageMaker's /ping (GET or POST): /health by another name.
func (s *Server) ping(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	s.health(w, r)
}

// load is GET /load: {"server_load": n}, the requests in flight.
func (s *Server) load(w http.ResponseWriter, _ *http.Request) {
	n := 0
	for _, e := range s.engines {
		c := e.requestCounts()
		n += c[0] + c[1]
	}
	writeJSON(w, http.StatusOK, map[string]int{"server_load": n})
}
