package judgments

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// MediaMarker is the placeholder typevet puts in the user text, one per image.
const MediaMarker = "<__media__>"

// Image is one encoded image, sent as its original bytes (no re-encode).
type Image struct {
	MIME string
	Data []byte
}

// DataURL is the image as a data: URI.
func (im Image) DataURL() string {
	return "data:" + im.MIME + ";base64," + base64.StdEncoding.EncodeToString(im.Data)
}

// Digest is the hex sha256 of the image bytes.
func (im Image) Digest() string {
	sum := sha256.Sum256(im.Data)
	return hex.EncodeToString(sum[:])
}

// Item is one judgment's input: its images and the state text.
type Item struct {
	ID     string
	State  string
	Images []Image
}

// Spec is a set's questions, asked in this order for every item.
type Spec struct {
	Name      string
	Questions []Question
}

// Validate checks every question and that ids are unique.
func (s Spec) Validate() error {
	if len(s.Questions) == 0 {
		return fmt.Errorf("spec %s: no questions", s.Name)
	}
	seen := map[string]bool{}
	for _, q := range s.Questions {
		if err := q.Validate(); err != nil {
			return fmt.Errorf("spec %s: %w", s.Name, err)
		}
		if seen[q.ID] {
			return fmt.Errorf("spec %s: duplicate question id %q", s.Name, q.ID)
		}
		seen[q.ID] = true
	}
	return nil
}

// Question returns the question with the given id.
func (s Spec) Question(id string) (Question, bool) {
	for _, q := range s.Questions {
		if q.ID == id {
			return q, true
		}
	}
	return Question{}, false
}

// Controls lists every control string the spec needs, once each, in order.
func (s Spec) Controls() []string {
	n := 0
	for _, q := range s.Questions {
		n = max(n, len(q.Options))
	}
	out := make([]string, n)
	for i := range out {
		out[i] = Control(i)
	}
	return out
}

// PromptDigests maps question id to its typevet prompt digest.
func (s Spec) PromptDigests() map[string]string {
	out := make(map[string]string, len(s.Questions))
	for _, q := range s.Questions {
		out[q.ID] = q.Digest()
	}
	return out
}

// UserText is typevet's user text: one media marker per image, each on its
// own line, the state, a blank line and the field block.
func UserText(it Item, q Question) string {
	var b strings.Builder
	for range it.Images {
		b.WriteString(MediaMarker + "\n")
	}
	b.WriteString(it.State)
	b.WriteString("\n\n")
	b.WriteString(q.FieldBlock())
	return b.String()
}

// Content splits the user text at each media marker: a marker becomes an
// image_url block with a data: URL, the text between markers a text block
// (one newline right after a marker dropped, empty blocks omitted). With the
// standard context this yields the images first, then one text block.
// urls holds the images' data URLs, in order (built once per item).
func Content(it Item, q Question, urls []string) ([]openai.ChatMessagePart, error) {
	text := UserText(it, q)
	pieces := strings.Split(text, MediaMarker)
	if len(pieces)-1 != len(urls) {
		return nil, fmt.Errorf("item %s: %d media markers for %d images", it.ID, len(pieces)-1, len(urls))
	}
	var parts []openai.ChatMessagePart
	for i, p := range pieces {
		if i > 0 {
			p = strings.TrimPrefix(p, "\n")
		}
		if p != "" {
			parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: p})
		}
		if i < len(urls) {
			parts = append(parts, openai.ChatMessagePart{
				Type:     openai.ChatMessagePartTypeImageURL,
				ImageURL: &openai.ChatMessageImageURL{URL: urls[i]},
			})
		}
	}
	return parts, nil
}

// RequestID names one scoring request so that a server log, or a replaying
// twin, can tell which item and question it was: prefix|item|question.
func RequestID(prefix, item, question string) string {
	return prefix + "|" + item + "|" + question
}

// ParseRequestID returns the item and question of a RequestID.
func ParseRequestID(id string) (item, question string, ok bool) {
	i := strings.LastIndexByte(id, '|')
	if i < 0 {
		return "", "", false
	}
	j := strings.LastIndexByte(id[:i], '|')
	if j < 0 {
		return "", "", false
	}
	return id[j+1 : i], id[i+1:], true
}
