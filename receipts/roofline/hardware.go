package roofline

import (
	"fmt"
	"slices"
	"strings"
)

// Source says where a peak came from.
type Source string

// Sources of a peak.
const (
	Spec     Source = "spec"     // a published spec-sheet value
	Measured Source = "measured" // measured on the machine by the user
)

// Peak is one ceiling's rate and where it came from.
type Peak struct {
	Value  float64
	Source Source
}

// Hardware is a GPU's peaks: memory bandwidth in bytes/s, dense bf16
// tensor throughput in FLOP/s.
type Hardware struct {
	Name        string
	Description string
	Bandwidth   Peak
	FLOPs       Peak
	// MemoryBytes is the GPU memory, for KV capacity. Spec sheets' "80 GB"
	// and "141 GB" are binary: the memory a process sees (what vLLM's
	// gpu_memory_utilization multiplies) is 80 and 141 GiB, not 80e9 and
	// 141e9 bytes.
	MemoryBytes float64
	// Link is the GPU-to-GPU interconnect tensor parallelism all-reduces
	// over.
	Link Link
}

// Link is a GPU interconnect: the bandwidth one GPU sends at (one
// direction), and the fixed latency of one small all-reduce over it.
type Link struct {
	Name      string
	Bandwidth Peak // bytes/s per GPU, one direction
	Latency   Peak // seconds per all-reduce, whatever its size
}

// allReduceLatency is the fixed cost of one all-reduce of a decode step's
// activations (a few hundred KB) over NVLink: an estimate, not a
// measurement. vLLM's custom all-reduce (one-shot, peer-to-peer buffers,
// inside CUDA graphs) is the path such messages take; its published
// microbenchmarks and NCCL's all_reduce_perf on NVLink put small messages
// at single-digit microseconds. A measured figure replaces it
// (-allreduce-latency).
const allReduceLatency = 5e-6

// nvlink4 is Hopper SXM's NVLink: 18 links, 900 GB/s both directions
// (NVIDIA H100 and H200 datasheets), so 450 GB/s each way.
var nvlink4 = Link{Name: "NVLink 4", Bandwidth: Peak{450e9, Spec}, Latency: Peak{allReduceLatency, Spec}}

// gib is 2³⁰ bytes.
const gib = 1 << 30

// gpus are published peaks (spec sheets; dense bf16, no sparsity). A
// measured figure replaces them: vendor peaks assume conditions a card does
// not hold. fp8 matmuls can run up to twice as fast on Hopper; pass a
// measured FLOP/s to say so.
var gpus = []Hardware{
	{Name: "h100-sxm", Description: "NVIDIA H100 SXM, 80 GB HBM3",
		Bandwidth: Peak{3.35e12, Spec}, FLOPs: Peak{989e12, Spec}, MemoryBytes: 80 * gib, Link: nvlink4},
	{Name: "h200-sxm", Description: "NVIDIA H200 SXM, 141 GB HBM3e",
		Bandwidth: Peak{4.8e12, Spec}, FLOPs: Peak{989e12, Spec}, MemoryBytes: 141 * gib, Link: nvlink4},
	{Name: "h200-nvl", Description: "NVIDIA H200 NVL, 141 GB HBM3e, lower power limit",
		Bandwidth: Peak{4.8e12, Spec}, FLOPs: Peak{836e12, Spec}, MemoryBytes: 141 * gib,
		// NVLink bridges, 2- or 4-way: 900 GB/s both directions (H200 NVL datasheet).
		Link: nvlink4},
	{Name: "rtx3090", Description: "NVIDIA GeForce RTX 3090, 24 GB GDDR6X (tensor cores, fp32 accumulate)",
		Bandwidth: Peak{936e9, Spec}, FLOPs: Peak{71e12, Spec}, MemoryBytes: 24 * gib,
		// The NVLink 3 bridge: 112.5 GB/s both directions (GeForce RTX 3090 specifications).
		Link: Link{Name: "NVLink 3 bridge", Bandwidth: Peak{56.25e9, Spec}, Latency: Peak{allReduceLatency, Spec}}},
}

// GPUs lists the table of published peaks.
func GPUs() []Hardware { return slices.Clone(gpus) }

// LookupGPU finds a GPU of the table by name (case-insensitive).
func LookupGPU(name string) (Hardware, error) {
	for _, g := range gpus {
		if strings.EqualFold(g.Name, name) {
			return g, nil
		}
	}
	names := make([]string, len(gpus))
	for i, g := range gpus {
		names[i] = g.Name
	}
	return Hardware{}, fmt.Errorf("unknown gpu %q (known: %s; or give -bandwidth and -flops)", name, strings.Join(names, ", "))
}

// Custom is a GPU known only by measured peaks.
func Custom(name string, bandwidth, flops float64) (Hardware, error) {
	h := Hardware{Name: name, Bandwidth: Peak{bandwidth, Measured}, FLOPs: Peak{flops, Measured}}
	return h, h.validate()
}

// WithMeasured returns h with the measured peaks that are > 0 in place of
// its spec values: a measured value always wins.
func (h Hardware) WithMeasured(bandwidth, flops float64) Hardware {
	if bandwidth > 0 {
		h.Bandwidth = Peak{bandwidth, Measured}
	}
	if flops > 0 {
		h.FLOPs = Peak{flops, Measured}
	}
	return h
}

// WithLink returns h with the measured interconnect figures that are > 0
// in place of its table values.
func (h Hardware) WithLink(bandwidth, latency float64) Hardware {
	if bandwidth > 0 {
		h.Link.Bandwidth = Peak{bandwidth, Measured}
	}
	if latency > 0 {
		h.Link.Latency = Peak{latency, Measured}
	}
	return h
}

// Ridge is the arithmetic intensity (FLOP per byte) above which a step is
// compute bound: peak FLOP/s ÷ peak bytes/s.
func (h Hardware) Ridge() float64 { return h.FLOPs.Value / h.Bandwidth.Value }

func (h Hardware) validate() error {
	if !(h.Bandwidth.Value > 0) {
		return fmt.Errorf("gpu %s: bandwidth %g bytes/s: want > 0", h.Name, h.Bandwidth.Value)
	}
	if !(h.FLOPs.Value > 0) {
		return fmt.Errorf("gpu %s: compute %g FLOP/s: want > 0", h.Name, h.FLOPs.Value)
	}
	return nil
}
