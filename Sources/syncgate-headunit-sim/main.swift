#if canImport(Glibc)
import Glibc
#endif

// A launcher may hand down a blocked signal mask (posix_spawn from a thread that blocks SIGTERM): unblock
// everything so SIGTERM and SIGINT end the simulator at once.
var emptySet = sigset_t()
sigemptyset(&emptySet)
pthread_sigmask(SIG_SETMASK, &emptySet, nil)

HeadUnitSimulator.main()
