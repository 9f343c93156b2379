package stub

// The external tests (package stub_test, which may import bench and
// stub/container, both of which import stub) reach the contract suite
// through these names.

// ContractTarget is contractTarget.
type ContractTarget = contractTarget

// ContractSuite is contractSuite.
var ContractSuite = contractSuite
