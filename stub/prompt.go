package stub

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strings"
)

// part is one content block of a user message: text, or an image.
type part struct {
	Text  string
	Image []byte // decoded image bytes; nil for text
}

// promptImage is one image of a rendered prompt.
type promptImage struct {
	Digest string // hex sha256 of the image bytes
	Offset int    // index of its first placeholder token
	Length int    // placeholder tokens (the soft tokens only)
}

// prompt is a rendered chat request: the token ids the engine sees.
type prompt struct {
	Tokens []int
	Images []promptImage
	// Text is the user text the answer model reads (text parts joined).
	Text string
}

// renderChat applies the twin's Gemma-like chat template:
//
//	<bos><|turn>user\n{parts}<turn|>\n[<|turn>model\n[<|channel>thought\n<channel|>]]
//
// where a turn header ("user\n", "model\n") is one token, an image expands to "<|image>" + n × placeholder + "<image|>" with n
// from ImageTokens, and the generation prompt ends with an empty thought
// channel unless thinking is on (Gemma 4's no-thinking prefill). With
// typevet's prompts this gives the receipts' sizes: ~480 tokens per checks
// request, ~660 per faces request, ~680 per signatures request.
func renderChat(msgs []message, addGenerationPrompt, thinking bool, budget int) (prompt, error) {
	var p prompt
	var text strings.Builder
	p.Tokens = append(p.Tokens, TokenBOS)
	for _, m := range msgs {
		p.Tokens = append(p.Tokens, TokenTurnStart, pieceID(roleTurn(m.Role)+"\n"))
		for _, pt := range m.Parts {
			if pt.Image == nil {
				p.Tokens = appendText(p.Tokens, pt.Text)
				text.WriteString(pt.Text)
				continue
			}
			w, h, err := imageSize(pt.Image)
			if err != nil {
				return prompt{}, err
			}
			n := ImageTokens(w, h, budget)
			sum := sha256.Sum256(pt.Image)
			p.Tokens = append(p.Tokens, TokenImageStart)
			p.Images = append(p.Images, promptImage{Digest: hex.EncodeToString(sum[:]), Offset: len(p.Tokens), Length: n})
			for range n {
				p.Tokens = append(p.Tokens, TokenImageSoft)
			}
			p.Tokens = append(p.Tokens, TokenImageEnd)
		}
		p.Tokens = append(p.Tokens, TokenTurnEnd)
		p.Tokens = appendText(p.Tokens, "\n")
	}
	if addGenerationPrompt {
		p.Tokens = append(p.Tokens, TokenTurnStart, pieceID("model\n"))
		if !thinking {
			p.Tokens = append(p.Tokens, TokenChannelStart)
			p.Tokens = appendText(p.Tokens, "thought\n")
			p.Tokens = append(p.Tokens, TokenChannelEnd)
		}
	}
	p.Text = text.String()
	return p, nil
}

// roleTurn is the turn name of a role (Gemma calls the assistant "model").
func roleTurn(role string) string {
	if role == "assistant" {
		return "model"
	}
	return role
}

func appendText(ids []int, text string) []int {
	for _, t := range Tokenize(text) {
		ids = append(ids, t.ID)
	}
	return ids
}

// blockHashes hashes every full block of the prompt as a chain (a block's
// hash covers all tokens before it), mixing in the digest of every image
// whose placeholders overlap the block, as vLLM's extra keys do. Two
// prompts share a cached block only when everything up to its end matches.
// salt (cache_salt) is mixed into the first block.
func blockHashes(p prompt, blockSize int, salt string) []uint64 {
	n := len(p.Tokens) / blockSize
	out := make([]uint64, n)
	var prev uint64
	buf := make([]byte, 8)
	for b := range n {
		h := fnv.New64a()
		binary.LittleEndian.PutUint64(buf, prev)
		h.Write(buf)
		if b == 0 && salt != "" {
			h.Write([]byte(salt))
		}
		lo, hi := b*blockSize, (b+1)*blockSize
		for _, id := range p.Tokens[lo:hi] {
			binary.LittleEndian.PutUint64(buf, uint64(id))
			h.Write(buf)
		}
		for _, im := range p.Images {
			if im.Offset < hi && im.Offset+im.Length > lo {
				h.Write([]byte(im.Digest))
			}
		}
		prev = h.Sum64()
		out[b] = prev
	}
	return out
}

// decodeDataURL returns the bytes of a data: URL. The twin fetches
// nothing, so any other scheme is refused.
func decodeDataURL(url string) ([]byte, error) {
	rest, ok := strings.CutPrefix(url, "data:")
	if !ok {
		scheme, _, _ := strings.Cut(url, ":")
		return nil, fmt.Errorf("image url scheme %q: the twin only reads data: URLs", scheme)
	}
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, fmt.Errorf("data URL has no comma")
	}
	if !strings.HasSuffix(meta, ";base64") {
		return nil, fmt.Errorf("data URL %q is not base64", meta)
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return nil, fmt.Errorf("data URL payload: %w", err)
	}
	return data, nil
}

// countOptions counts the option lines of the last "Options:" block in a
// prompt (typevet's field block: one "[Control ]<c> → label" line per
// option), so that both scoring modes see the same candidate set.
func countOptions(text string) int {
	i := strings.LastIndex(text, "Options:\n")
	if i < 0 {
		return 0
	}
	n := 0
	for _, line := range strings.Split(text[i+len("Options:\n"):], "\n") {
		line = strings.TrimPrefix(line, "Control ")
		c, rest, ok := strings.Cut(line, " → ")
		_ = rest
		if !ok {
			break
		}
		if id, isCtrl := ControlTokenID(c); !isCtrl || id != controlID(n) {
			break
		}
		n++
	}
	return n
}

// controlID is the token id of decision index i's control.
func controlID(i int) int {
	if i < 10 {
		return TokenDigit0 + i
	}
	return TokenLetterA + i - 10
}
