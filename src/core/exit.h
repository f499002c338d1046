/* perflab's exit codes (README and `perflab --help` document them): what every verb and core call returns. */
#ifndef PERFLAB_CORE_EXIT_H
#define PERFLAB_CORE_EXIT_H

enum {
    PL_EXIT_OK = 0,
    PL_EXIT_FAILED = 1, /* a target failed, failed verification, regressed, or an SLO was missed */
    PL_EXIT_USAGE = 2,  /* bad usage or bad input file */
    PL_EXIT_NO_GPU = 3, /* no usable GPU or driver for a GPU verb */
    PL_EXIT_INTERRUPTED = 130,
};

#endif
