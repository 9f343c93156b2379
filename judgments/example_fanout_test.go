package judgments_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/vetbench/vetbench/judgments"
)

// With fan-out a judgment's questions are sent at once; the answers come
// back in question order all the same.
func ExampleWithFanOut() {
	spec := judgments.Spec{Name: "demo", Questions: []judgments.Question{
		judgments.NewNoul("legible", "Can the text be read?", "It can.", "It cannot."),
		judgments.NewScore("quality", "Rate the image:", "bad", "poor", "fair", "good", "sharp"),
	}}
	ctrl := judgments.Controls{}
	for i, k := range spec.Controls() {
		ctrl[k] = 236048 + i
	}
	srv := httptest.NewServer(newCannedVLLM(spec, ctrl, judgments.ModeTokenIDs)) // answers control 0
	defer srv.Close()

	c := judgments.NewClient(srv.URL, judgments.WithModel(overheadModel), judgments.WithFanOut(true))
	it := judgments.Item{ID: "r00", State: "One image.", Images: []judgments.Image{{MIME: "image/png", Data: []byte("png")}}}
	j, err := c.Judge(context.Background(), spec, ctrl, it)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range j.Answers {
		fmt.Println(a.Question, a.Label)
	}
	fmt.Println(j.Requests, "requests")
	// Output:
	// legible false
	// quality 0
	// 2 requests
}
