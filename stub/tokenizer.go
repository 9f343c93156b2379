package stub

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"image"
	_ "image/gif"  // image dimensions of GIF data URLs
	_ "image/jpeg" // image dimensions of JPEG data URLs
	_ "image/png"  // image dimensions of PNG data URLs
	"math"
	"unicode"
	"unicode/utf8"
)

// Token ids of the twin's vocabulary. They are Gemma-like (a 262,144-token
// vocabulary with the single-character controls high up) but not Gemma's:
// a client must read them from /tokenize, as it would on a real server.
const (
	VocabSize = 262144

	TokenBOS          = 2
	TokenChannelStart = 100    // "<|channel>"
	TokenChannelEnd   = 101    // "<channel|>"
	TokenTurnStart    = 105    // "<|turn>"
	TokenTurnEnd      = 106    // "<turn|>"
	TokenNewline      = 107    // "\n"
	TokenNewlines     = 108    // "\n\n"
	TokenSpace        = 236743 // "▁", a space before a digit
	TokenImageStart   = 255999 // "<|image>"
	TokenImageEnd     = 256000 // "<image|>"
	TokenImageSoft    = 262143 // one image placeholder token

	// TokenDigit0 is "0"; "1".."9" follow.
	TokenDigit0 = 236800
	// TokenLetterA is "A"; "B".."Z" follow.
	TokenLetterA = 236810

	// Word and punctuation pieces hash into [wordBase, wordBase+wordSpan).
	wordBase = 1000
	wordSpan = 230000
)

// DefaultImageTokenBudget is the most placeholder tokens one image expands
// to (Gemma 4's default vision budget is 280 soft tokens).
const DefaultImageTokenBudget = 280

// Token is one token with its text piece ("▁" marks a leading space, as
// SentencePiece writes it).
type Token struct {
	ID    int
	Piece string
}

// ControlTokenID is the token id of a single-character control ("0".."9",
// "A".."Z"), or false for any other string.
func ControlTokenID(s string) (int, bool) {
	if len(s) != 1 {
		return 0, false
	}
	c := s[0]
	switch {
	case c >= '0' && c <= '9':
		return TokenDigit0 + int(c-'0'), true
	case c >= 'A' && c <= 'Z':
		return TokenLetterA + int(c-'A'), true
	}
	return 0, false
}

// controlText is the inverse of ControlTokenID.
func controlText(id int) (string, bool) {
	switch {
	case id >= TokenDigit0 && id < TokenDigit0+10:
		return string(rune('0' + id - TokenDigit0)), true
	case id >= TokenLetterA && id < TokenLetterA+26:
		return string(rune('A' + id - TokenLetterA)), true
	}
	return "", false
}

// Tokenize splits text the way the twin's tokenizer does: every digit is a
// token (so "10" is two), a run of letters is one token per started 8
// letters with its leading space attached, every other symbol is one token,
// "\n\n" and "\n" are tokens. Close enough to Gemma's SentencePiece for
// prompt sizes; not the same ids.
func Tokenize(text string) []Token {
	var out []Token
	lead := false // a single space waits to be attached to the next piece
	flushSpace := func() {
		if lead {
			out = append(out, Token{ID: TokenSpace, Piece: "▁"})
			lead = false
		}
	}
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == '\n':
			flushSpace()
			n := 0
			for i < len(text) && text[i] == '\n' {
				n++
				i++
			}
			for ; n >= 2; n -= 2 {
				out = append(out, Token{ID: TokenNewlines, Piece: "\n\n"})
			}
			if n == 1 {
				out = append(out, Token{ID: TokenNewline, Piece: "\n"})
			}
			continue
		case r == ' ':
			if lead {
				out = append(out, Token{ID: TokenSpace, Piece: "▁"})
			}
			lead = true
		case r >= '0' && r <= '9':
			flushSpace()
			out = append(out, Token{ID: TokenDigit0 + int(r-'0'), Piece: string(r)})
		case unicode.IsLetter(r):
			j := i
			for j < len(text) {
				r2, s2 := utf8.DecodeRuneInString(text[j:])
				if !unicode.IsLetter(r2) {
					break
				}
				j += s2
			}
			word := text[i:j]
			prefix := ""
			if lead {
				prefix = "▁"
				lead = false
			}
			out = append(out, wordTokens(prefix, word)...)
			i = j
			continue
		default:
			piece := string(r)
			if lead {
				piece = "▁" + piece
				lead = false
			}
			out = append(out, Token{ID: pieceID(piece), Piece: piece})
		}
		i += size
	}
	flushSpace()
	return out
}

// wordChunk is how many letters one word token holds at most.
const wordChunk = 8

func wordTokens(prefix, word string) []Token {
	if prefix == "" {
		if id, ok := ControlTokenID(word); ok {
			return []Token{{ID: id, Piece: word}}
		}
	}
	runes := []rune(word)
	var out []Token
	for k := 0; k < len(runes); k += wordChunk {
		piece := string(runes[k:min(k+wordChunk, len(runes))])
		if k == 0 {
			piece = prefix + piece
		}
		out = append(out, Token{ID: pieceID(piece), Piece: piece})
	}
	return out
}

func pieceID(piece string) int {
	h := fnv.New64a()
	h.Write([]byte(piece))
	return wordBase + int(h.Sum64()%wordSpan)
}

// ImageTokens is how many placeholder tokens an image of w×h pixels expands
// to: the largest grid with the image's aspect ratio that fits the budget
// (so a square image gets 16×16 = 256 of 280, a 1000×440 check 25×11 = 275).
func ImageTokens(w, h, budget int) int {
	if w <= 0 || h <= 0 {
		return budget
	}
	s := math.Sqrt(float64(budget) / float64(w*h))
	rows := max(1, int(math.Floor(float64(h)*s)))
	cols := max(1, int(math.Floor(float64(w)*s)))
	for rows*cols > budget {
		if cols >= rows {
			cols--
		} else {
			rows--
		}
	}
	return rows * cols
}

// imageSize reads the dimensions of an encoded image (PNG, JPEG, GIF).
func imageSize(data []byte) (w, h int, err error) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return 0, 0, fmt.Errorf("read image header: %w", err)
	}
	return cfg.Width, cfg.Height, nil
}
