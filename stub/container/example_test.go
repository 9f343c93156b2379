package container_test

import (
	"context"
	"fmt"
	"log"

	"github.com/testcontainers/testcontainers-go"

	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/stub"
	"github.com/vetbench/vetbench/stub/container"
)

// Run the H100 profile ten times faster than real time in a container,
// with dev mode on (a caller's customizer, applied after the module's),
// and judge against it. Without a Docker daemon, DockerAvailable says why.
func ExampleRun() {
	ctx := context.Background()
	if err := container.DockerAvailable(ctx); err != nil {
		log.Print(err)
		return
	}
	ctr, err := container.Run(ctx,
		container.WithConfig(stub.Config{Profile: stub.ProfileH100Gemma4(), TimeScale: 10}),
		testcontainers.WithEnv(map[string]string{"VLLM_SERVER_DEV_MODE": "1"}))
	defer func() {
		if err := testcontainers.TerminateContainer(ctr); err != nil {
			log.Print(err)
		}
	}()
	if err != nil {
		log.Print(err)
		return
	}
	url, err := ctr.BaseURL(ctx)
	if err != nil {
		log.Print(err)
		return
	}
	cl := judgments.NewClient(url)
	spec := judgments.Spec{Name: "demo", Questions: []judgments.Question{
		judgments.NewNoul("is_square", "Is the shape a square?", "It is a square.", "It is not a square."),
	}}
	controls, err := cl.Tokenize(ctx, spec.Controls())
	if err != nil {
		log.Print(err)
		return
	}
	j, err := cl.Judge(ctx, spec, controls, judgments.Item{ID: "shape-1", State: "A grey square."})
	if err != nil {
		log.Print(err)
		return
	}
	fmt.Printf("%s: %s\n", j.Answers[0].Question, j.Answers[0].Label)
}
