// Package sensor is the sensor-description compiler: it turns a parsed
// sensor-description file (grammar/sdl) into a catalog of entity types and
// primitive relations (algebra.Catalog), checking it on the way. Its
// sub-packages generate the sensors themselves: sensor/gogen Go code for
// subject programs, sensor/bpfgen eBPF programs for the kernel (from the
// description's `sensor` bindings, which Compile leaves to it).
package sensor
