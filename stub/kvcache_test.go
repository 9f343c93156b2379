package stub

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBlockPoolHoldsNoPointers guards what keeps a million-block pool out
// of the garbage collector's work: a block holds no pointer (a field that
// is one fails this), and pages are made only as blocks are first used.
func TestBlockPoolHoldsNoPointers(t *testing.T) {
	typ := reflect.TypeFor[block]()
	for i := range typ.NumField() {
		switch typ.Field(i).Type.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.String, reflect.Interface, reflect.Chan, reflect.Func, reflect.UnsafePointer:
			t.Errorf("block.%s is a %s: the pool would be scanned by every GC", typ.Field(i).Name, typ.Field(i).Type.Kind())
		}
	}
	p := newBlockPool(1_205_053, true) // E2B on an H200 NVL
	made := func() (n int) {
		for _, pg := range p.pages {
			if pg != nil {
				n++
			}
		}
		return n
	}
	require.Zero(t, made())
	for range blockPage + 1 {
		require.NotNil(t, p.allocate())
	}
	require.Equal(t, 2, made())
	require.Equal(t, 1_205_053-blockPage-1, p.numFree)
}
