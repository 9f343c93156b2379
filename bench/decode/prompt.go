package decode

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"sync/atomic"
	"unsafe"

	"github.com/vetbench/vetbench/bench/stream"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// The prompt every request asks, after its tag: short, and open-ended so
// that a model without ignore_eos would still write for a while.
const (
	textPrompt  = "Write a long, detailed story about a lighthouse keeper who finds a message in a bottle. Keep writing."
	imagePrompt = "Describe this image in great detail: every shape, colour and texture you see. Keep writing."
	// imageSide is the side of the square test image in pixels.
	imageSide = 224
	// recipe versions the prompts and the image generator: part of the
	// prompt digest, so a change here changes the identity.
	recipe = "vetbench-tokens-prompts/1"
)

// Prompts hands out requests whose prompts share no prefix: each starts
// with a tag unique to the run and the request ("[vb-<run>-<n>] "), so
// vLLM's chained block hashes differ from the first block on and no two
// requests (of one point, two points or two runs) share cache entries;
// only the chat template's header tokens are shared. A one-image request
// also gets its own image (the tag's number drawn into its pixels), so
// the multimodal caches miss too.
//
// Shared prompts (NewSharedPrompts) re-send the same list instead, point
// after point: the cache pitfall of a ladder on a server with prefix
// caching on, kept only to show how much it inflates throughput.
type Prompts struct {
	run    string
	shared bool
	n      atomic.Int64
}

// NewPrompts returns unique prompts tagged with run (a short id).
func NewPrompts(run string) *Prompts { return &Prompts{run: run} }

// NewSharedPrompts returns prompts that repeat: the i-th request of every
// batch gets the same prompt and image.
func NewSharedPrompts(run string) *Prompts { return &Prompts{run: run, shared: true} }

// Isolation is the receipt's cache isolation for these prompts.
func (p *Prompts) Isolation() string {
	if p.shared {
		return tokens.CacheSharedPrompts
	}
	return tokens.CacheUniquePrompts
}

// MaxBatchBytes bounds what one repeat's prompts hold in memory: they are
// all built before its clock starts (as vllm bench serve samples its
// requests before sending), so a batch past it is refused before any
// request is built (-num-prompts 100000000 died out of memory).
const MaxBatchBytes = 2 << 30

// BatchBytes is about what n requests of workload for outputTokens each
// hold while a repeat runs: n times the first one's prompt, image, request
// and result, and a gap timed for every token.
func BatchBytes(workload string, n, outputTokens int) (int64, error) {
	one, err := NewSharedPrompts("size").Batch(workload, 1, 1)
	if err != nil {
		return 0, err
	}
	q := one[0]
	per := int64(len(q.Messages[0].Text)+len(q.Messages[0].ImageURL)+len(q.ID)) +
		int64(unsafe.Sizeof(q)+unsafe.Sizeof(stream.Message{})+unsafe.Sizeof(stream.Result{})) + 8*int64(max(outputTokens, 0))
	return int64(n) * per, nil
}

// Batch returns n requests of workload for outputTokens each: greedy,
// ignore_eos, every prompt fresh (or, shared, the batch's first n of one
// fixed list).
func (p *Prompts) Batch(workload string, n, outputTokens int) ([]stream.Request, error) {
	if n > 1 {
		if b, err := BatchBytes(workload, n, outputTokens); err != nil {
			return nil, err
		} else if b > MaxBatchBytes {
			return nil, fmt.Errorf("%d %s requests hold about %d MiB, over %d MiB (decode.MaxBatchBytes): every prompt is built before the clock starts; send fewer (-num-prompts, -levels)",
				n, workload, b>>20, MaxBatchBytes>>20)
		}
	}
	out := make([]stream.Request, n)
	for i := range n {
		k := int(p.n.Add(1))
		if p.shared {
			k = i + 1
		}
		tag := fmt.Sprintf("[vb-%s-%d] ", p.run, k)
		switch workload {
		case tokens.WorkloadText:
			out[i] = stream.Text(tag+textPrompt, outputTokens)
		case tokens.WorkloadOneImage:
			img, err := Image(k)
			if err != nil {
				return nil, err
			}
			out[i] = stream.Image(tag+imagePrompt, stream.DataURL("image/png", img), outputTokens)
		default:
			return nil, fmt.Errorf("workload %q: want %s or %s", workload, tokens.WorkloadText, tokens.WorkloadOneImage)
		}
		out[i].ID = fmt.Sprintf("vetbench-tokens-%s-%d", p.run, k)
	}
	return out, nil
}

// Digest is the hex sha256 of what every request asks, tags and image
// numbers left out: it names the workload, not the run, so two runs of one
// workload share it.
func Digest(workload string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n", recipe, workload)
	switch workload {
	case tokens.WorkloadText:
		h.Write([]byte(textPrompt))
	case tokens.WorkloadOneImage:
		fmt.Fprintf(h, "%s\nimage %dx%d png\n", imagePrompt, imageSide, imageSide)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Image is the k-th test image: a smooth colour field (so a vision
// encoder sees an ordinary picture) with k's bits drawn as a row of
// blocks, so no two images are alike.
func Image(k int) ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, imageSide, imageSide))
	for y := range imageSide {
		for x := range imageSide {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), uint8((x + y) / 2), 255})
		}
	}
	const block = 7
	for bit := range 32 {
		if k>>bit&1 == 0 {
			continue
		}
		for y := range block {
			for x := range block {
				img.Set(bit*block+x, y, color.RGBA{255, 255, 255, 255})
			}
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return nil, fmt.Errorf("encode test image: %w", err)
	}
	return b.Bytes(), nil
}
