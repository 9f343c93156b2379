package roofline

import (
	"fmt"
	"strings"
)

// Dtype is a storage format of weights or KV.
type Dtype string

// Dtypes known to the shape reader.
const (
	BF16  Dtype = "bf16"
	FP16  Dtype = "fp16"
	FP8   Dtype = "fp8"
	MXFP4 Dtype = "mxfp4"
)

// Bytes is the storage per value: MXFP4 packs 32 4-bit values with one
// 8-bit shared scale, (32·4 + 8) / 8 / 32 = 0.53125 byte.
func (d Dtype) Bytes() float64 {
	switch d {
	case BF16, FP16:
		return 2
	case FP8:
		return 1
	case MXFP4:
		return 0.53125
	}
	return 0
}

// ParseWeightDtype reads a weight dtype (bf16, fp16, fp8, mxfp4).
func ParseWeightDtype(s string) (Dtype, error) {
	switch d := Dtype(strings.ToLower(s)); d {
	case BF16, FP16, FP8, MXFP4:
		return d, nil
	}
	return "", fmt.Errorf("weight dtype %q: want bf16, fp16, fp8 or mxfp4", s)
}

// ParseKVDtype reads a KV cache dtype (bf16, fp16, fp8).
func ParseKVDtype(s string) (Dtype, error) {
	switch d := Dtype(strings.ToLower(s)); d {
	case BF16, FP16, FP8:
		return d, nil
	}
	return "", fmt.Errorf("kv dtype %q: want bf16, fp16 or fp8", s)
}

// Dtypes says how a model is stored. The zero value is bf16 throughout.
type Dtypes struct {
	// Weights prices the block linears: attention projections, dense MLPs,
	// shared experts.
	Weights Dtype
	// Experts prices the routed experts; Weights when empty.
	Experts Dtype
	// KV prices the KV cache.
	KV Dtype
}

// over fills what d leaves empty from the dtypes a config states: its
// weights (and experts) when d names no weights; a named weight dtype
// prices the experts too unless they are named.
func (d Dtypes) over(stated Dtypes) Dtypes {
	if d.Weights == "" {
		d.Weights = stated.Weights
		if d.Experts == "" {
			d.Experts = stated.Experts
		}
	}
	return d
}

// orDefault fills empty fields: bf16, and Experts from Weights.
func (d Dtypes) orDefault() Dtypes {
	if d.Weights == "" {
		d.Weights = BF16
	}
	if d.Experts == "" {
		d.Experts = d.Weights
	}
	if d.KV == "" {
		d.KV = BF16
	}
	return d
}

func (d Dtypes) validate() error {
	if _, err := ParseWeightDtype(string(d.Weights)); err != nil {
		return err
	}
	if _, err := ParseWeightDtype(string(d.Experts)); err != nil {
		return fmt.Errorf("experts: %w", err)
	}
	if _, err := ParseKVDtype(string(d.KV)); err != nil {
		return err
	}
	return nil
}
