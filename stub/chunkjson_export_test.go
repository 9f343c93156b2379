package stub

import (
	"bytes"
	"encoding/json"
)

// RemarshalChunk decodes a stream event into the chunk shape (refusing
// fields the shape lacks) and encodes it again with encoding/json: what
// the stream writer sent before it encoded chunks by hand.
func RemarshalChunk(ev string) (string, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(ev)))
	dec.DisallowUnknownFields()
	var ch chunkJSON
	if err := dec.Decode(&ch); err != nil {
		return "", err
	}
	b, err := marshal(ch)
	return string(b), err
}
