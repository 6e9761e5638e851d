package statelog

// GateNode appends a node gate through the write path, as NodeGates'
// steps do: the seam the scripts' evict and readmit commands drive.
var GateNode = (*Replica).gateNode
