package main

import (
	"fmt"

	"github.com/vetbench/vetbench/fixtures/checks"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/stub"
	"github.com/vetbench/vetbench/stub/fit"
)

// fitH100 fits the H100 profile on the receipts at path (set: one set's
// only, "" all).
func fitH100(path, set string, s fit.Search) (fit.Result, error) {
	switch set {
	case "", "checks", "faces", "signatures":
	default:
		return fit.Result{}, fmt.Errorf("-set %q: want checks, faces or signatures", set)
	}
	rec, err := stub.ReadTypevetReceipts(path)
	if err != nil {
		return fit.Result{}, err
	}
	sets, err := typevetSets()
	if err != nil {
		return fit.Result{}, err
	}
	sweep, err := stub.NewTypevetSweep(stub.ProfileH100Gemma4(), sets)
	if err != nil {
		return fit.Result{}, err
	}
	return fit.H100(sweep, rec, set, s)
}

// typevetSets are the sets the H100 profile is fitted to, as its tests
// build them: the checks generator's items (its questions and state text,
// token for token), each check a distinct compact 1000×440 PNG (the twin
// reads only sizes and digests), typevet's subset its first 63; and
// look-alikes of typevet's 200 LFW pairs and 180 CEDAR pairs.
func typevetSets() ([]stub.TypevetSet, error) {
	cases, err := checks.Cases(0, checks.DefaultRows)
	if err != nil {
		return nil, err
	}
	cs := stub.TypevetSet{Name: "checks", Spec: checks.Spec(), Subset: 63}
	for i, c := range cases {
		im, err := stub.LookalikePNG(1000, 440, i)
		if err != nil {
			return nil, err
		}
		cs.Items = append(cs.Items, judgments.Item{ID: c.ID(), State: fmt.Sprintf(checks.State, c.Row.Text()), Images: []judgments.Image{im}})
	}
	faces, err := stub.TypevetLookalikeFaces(100)
	if err != nil {
		return nil, err
	}
	sigs, err := stub.TypevetLookalikeSignatures(60)
	if err != nil {
		return nil, err
	}
	return []stub.TypevetSet{cs, faces, sigs}, nil
}
