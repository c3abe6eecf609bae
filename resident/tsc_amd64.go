package resident

// rdtscp reads the time-stamp counter, ordered after every earlier load
// (tsc_amd64.s).
func rdtscp() uint64

// rdtscLfence reads the time-stamp counter after LFENCE: ordered after
// every earlier load where LFENCE is dispatch serializing.
func rdtscLfence() uint64

func cpuid(leaf, sub uint32) (a, b, c, d uint32)

// lfence orders an earlier clock read before later loads.
func lfence()

// cpuTSC reports what the CPU offers for the TSC clock: whether the TSC
// is invariant (constant rate, running in every power state), whether
// RDTSCP exists, and whether LFENCE is dispatch serializing (so that
// LFENCE; RDTSC is an ordered read): always on Intel, on AMD where CPUID
// Fn8000_0021 EAX bit 2 (LfenceAlwaysSerializing) says so.
func cpuTSC() (invariant, rdtscp, lfence bool) {
	_, vb, vc, vd := cpuid(0, 0)
	intel := vb == 0x756e6547 && vd == 0x49656e69 && vc == 0x6c65746e // GenuineIntel
	amd := vb == 0x68747541 && vd == 0x69746e65 && vc == 0x444d4163   // AuthenticAMD
	maxExt, _, _, _ := cpuid(0x80000000, 0)
	if maxExt >= 0x80000001 {
		_, _, _, d := cpuid(0x80000001, 0)
		rdtscp = d&(1<<27) != 0
	}
	if maxExt >= 0x80000007 {
		_, _, _, d := cpuid(0x80000007, 0)
		invariant = d&(1<<8) != 0
	}
	lfence = intel
	if amd && maxExt >= 0x80000021 {
		a, _, _, _ := cpuid(0x80000021, 0)
		lfence = a&(1<<2) != 0
	}
	return invariant, rdtscp, lfence
}
