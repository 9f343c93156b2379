package stub

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
)

// part is one content block of a user message: text, or an image.
type part struct {
	Text  string
	Image *partImage // nil for text
}

// partImage is what the twin reads of an image: its digest and size (the
// twin does not look at pixels).
type partImage struct {
	Digest        string // hex sha256 of the image bytes
	Width, Height int
	// err is why the image's header could not be read (a 400 when the
	// prompt is rendered).
	err error
}

// newPartImage hashes and measures decoded image bytes.
func newPartImage(data []byte) *partImage {
	sum := sha256.Sum256(data)
	im := &partImage{Digest: hex.EncodeToString(sum[:])}
	im.Width, im.Height, im.err = imageSize(data)
	return im
}

// imageCacheBytes bounds the data URLs an imageCache keeps (a few hundred
// of the sets' images; the fixture sets hold well under it).
const imageCacheBytes = 64 << 20

// imageCache resolves image data URLs to what the twin reads of them,
// decoding, hashing and measuring each distinct URL once: a judgment
// sends the same images with every question, and a run sends the set at
// every level. It is the twin's own bookkeeping, not a modelled cache
// (the multimodal cache and its hits are modelled in the frontend). Once
// the URLs it holds pass max bytes it starts again, empty.
type imageCache struct {
	mu    sync.Mutex
	m     map[string]*partImage
	bytes int
	max   int
}

func newImageCache(max int) *imageCache {
	return &imageCache{m: map[string]*partImage{}, max: max}
}

// get resolves url (a data: URL). A URL that cannot be decoded is an
// error and is not kept; one whose image header is unreadable is kept
// with its error.
func (c *imageCache) get(url string) (*partImage, error) {
	c.mu.Lock()
	im, ok := c.m[url]
	c.mu.Unlock()
	if ok {
		return im, nil
	}
	data, err := decodeDataURL(url)
	if err != nil {
		return nil, err
	}
	im = newPartImage(data)
	if jsonPlain(url) {
		c.keep(url, im)
	}
	return im, nil
}

// getPlain resolves a data URL as it stood in a request body, unescaped
// (liftImageURLs), and says whether it is one: a URL that is not plain
// printable ASCII, or not a decodable data URL, is not resolved here (the
// body is then decoded the ordinary way, which reports it).
func (c *imageCache) getPlain(raw []byte) (*partImage, bool) {
	c.mu.Lock()
	im, ok := c.m[string(raw)]
	c.mu.Unlock()
	if ok {
		return im, true // only plain URLs are kept
	}
	url := string(raw)
	data, err := decodeDataURL(url)
	if err != nil || !jsonPlain(url) {
		return nil, false
	}
	im = newPartImage(data)
	c.keep(url, im)
	return im, true
}

func (c *imageCache) keep(url string, im *partImage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bytes+len(url) > c.max {
		clear(c.m)
		c.bytes = 0
	}
	if len(url) <= c.max {
		c.m[url] = im
		c.bytes += len(url)
	}
}

// jsonPlain says whether a base64 data URL is printable ASCII with no
// quote or backslash — text that stands in a JSON string unescaped —
// given that its payload decodes (base64 decoding skips only \r and \n,
// so the payload is checked for those alone).
func jsonPlain(url string) bool {
	meta, payload, _ := strings.Cut(url, ",")
	for i := 0; i < len(meta); i++ {
		if c := meta[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return strings.IndexByte(payload, '\r') < 0 && strings.IndexByte(payload, '\n') < 0
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
			if pt.Image.err != nil {
				return prompt{}, pt.Image.err
			}
			n := ImageTokens(pt.Image.Width, pt.Image.Height, budget)
			p.Tokens = append(p.Tokens, TokenImageStart)
			p.Images = append(p.Images, promptImage{Digest: pt.Image.Digest, Offset: len(p.Tokens), Length: n})
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
	if len(text) >= longText {
		return append(ids, longTexts.tokenIDs(text)...)
	}
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
