#include "common/zipf.h"

#include <math.h>

void pl_zipf_cdf(double *cdf, unsigned bins, double skew)
{
    double total = 0, acc = 0;
    for (unsigned k = 0; k < bins; k++)
        total += pow(k + 1.0, -skew);
    for (unsigned k = 0; k < bins; k++) {
        acc += pow(k + 1.0, -skew);
        cdf[k] = acc / total;
    }
    if (bins > 0)
        cdf[bins - 1] = 1.0;
}
