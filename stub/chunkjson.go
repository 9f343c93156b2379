package stub

import (
	"strconv"
	"unicode/utf8"
)

// A stream's chunks are appended by hand, byte for byte what marshal
// (encoding/json, HTML escaping off) makes of chunkJSON: at ×10 and
// c=128 the reflective encoder, fmt and their allocations were a fifth
// of the twin's CPU per streamed token (chunkjson_test.go holds the two
// equal over a table of chunks and fuzzes the string escaping). The
// part of a chunk that never changes within a stream (id, object,
// created, model) is encoded once per stream: its head.

// chunkHead is ch's fixed part: {"id":…,"object":…,"created":…,"model":…,"choices":
func chunkHead(ch *chunkJSON) []byte {
	b := append([]byte(nil), `{"id":`...)
	b = appendJSONString(b, ch.ID)
	b = append(b, `,"object":`...)
	b = appendJSONString(b, ch.Object)
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, ch.Created, 10)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, ch.Model)
	return append(b, `,"choices":`...)
}

// appendChunk appends ch as marshal encodes it; head is chunkHead of a
// chunk with ch's id, object, created and model. Raw fields are appended
// as they are: the writer's are null or marshal's (compact) output.
func appendChunk(b, head []byte, ch *chunkJSON) []byte {
	b = append(b, head...)
	if ch.Choices == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range ch.Choices {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendChoice(b, &ch.Choices[i])
		}
		b = append(b, ']')
	}
	b = appendUsage(b, ch.Usage)
	if len(ch.PromptTokenIDs) > 0 {
		b = append(b, `,"prompt_token_ids":`...)
		b = append(b, ch.PromptTokenIDs...)
	}
	return append(b, '}')
}

// appendUsage appends ,"usage":{…} when u is set.
func appendUsage(b []byte, u *usageJSON) []byte {
	if u == nil {
		return b
	}
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(u.PromptTokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(u.TotalTokens), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(u.CompletionTokens), 10)
	return append(b, '}')
}

func appendChoice(b []byte, c *choiceJSON) []byte {
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(c.Index), 10)
	b = append(b, `,"delta":{`...)
	first := true
	field := func(key string, v *string) {
		if v == nil {
			return
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, key...)
		b = appendJSONString(b, *v)
	}
	if c.Delta.Role != "" {
		field(`"role":`, &c.Delta.Role)
	}
	field(`"content":`, c.Delta.Content)
	field(`"reasoning":`, c.Delta.Reasoning)
	field(`"reasoning_content":`, c.Delta.ReasoningContent)
	b = append(b, `},"logprobs":`...)
	b = appendRaw(b, c.Logprobs)
	b = append(b, `,"finish_reason":`...)
	if c.FinishReason == nil {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, *c.FinishReason)
	}
	if len(c.StopReason) > 0 {
		b = append(b, `,"stop_reason":`...)
		b = append(b, c.StopReason...)
	}
	if len(c.TokenIDs) > 0 {
		b = append(b, `,"token_ids":`...)
		b = append(b, c.TokenIDs...)
	}
	return append(b, '}')
}

// appendRaw is a json.RawMessage without omitempty: nil is null.
func appendRaw(b, raw []byte) []byte {
	if raw == nil {
		return append(b, "null"...)
	}
	return append(b, raw...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s quoted as encoding/json quotes it with HTML
// escaping off: " and \ escaped, control characters as \b \f \n \r \t or
// \u00XX, invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
