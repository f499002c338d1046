#include "core/telemetry.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/nvml.h"
#include "core/util.h"

struct pl_sampler {
    pthread_t thread;
    pthread_mutex_t lock;
    pl_nvml_device dev;
    const pl_nvml *nvml;
    double period_s;
    int stop;
    pl_telemetry window;
};

void pl_summary_add(pl_summary *s, double x)
{
    if (s->n == 0 || x < s->min)
        s->min = x;
    if (s->n == 0 || x > s->max)
        s->max = x;
    s->n++;
    s->mean += (x - s->mean) / s->n;
}

static void summary_merge(pl_summary *into, const pl_summary *w)
{
    if (w->n == 0)
        return;
    if (into->n == 0 || w->min < into->min)
        into->min = w->min;
    if (into->n == 0 || w->max > into->max)
        into->max = w->max;
    into->mean += (w->mean - into->mean) * w->n / (into->n + w->n);
    into->n += w->n;
}

void pl_telemetry_merge(pl_telemetry *into, const pl_telemetry *w)
{
    summary_merge(&into->sm_clock_mhz, &w->sm_clock_mhz);
    summary_merge(&into->mem_clock_mhz, &w->mem_clock_mhz);
    summary_merge(&into->power_w, &w->power_w);
    summary_merge(&into->temperature_c, &w->temperature_c);
}

static void sample_once(pl_sampler *s)
{
    const pl_nvml *n = s->nvml;
    unsigned int v = 0;
    int have_sm = n->device_get_clock_info && n->device_get_clock_info(s->dev, PL_NVML_CLOCK_SM, &v) == 0;
    double sm = v;
    int have_mem = n->device_get_clock_info && n->device_get_clock_info(s->dev, PL_NVML_CLOCK_MEM, &v) == 0;
    double mem = v;
    int have_pw = n->device_get_power_usage && n->device_get_power_usage(s->dev, &v) == 0;
    double pw = v / 1000.0;
    int have_tc = n->device_get_temperature && n->device_get_temperature(s->dev, PL_NVML_TEMPERATURE_GPU, &v) == 0;
    double tc = v;
    pthread_mutex_lock(&s->lock);
    if (have_sm)
        pl_summary_add(&s->window.sm_clock_mhz, sm);
    if (have_mem)
        pl_summary_add(&s->window.mem_clock_mhz, mem);
    if (have_pw)
        pl_summary_add(&s->window.power_w, pw);
    if (have_tc)
        pl_summary_add(&s->window.temperature_c, tc);
    pthread_mutex_unlock(&s->lock);
}

static void *sampler_main(void *arg)
{
    pl_sampler *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->lock);
        int stop = s->stop;
        pthread_mutex_unlock(&s->lock);
        if (stop)
            break;
        sample_once(s);
        pl_sleep_s(s->period_s);
    }
    return NULL;
}

pl_sampler *pl_sampler_start(const char *pci_bus_id, double period_s, char *why, size_t whylen)
{
    const pl_nvml *n = pl_nvml_get(why, whylen);
    if (!n)
        return NULL;
    pl_sampler *s = pl_xcalloc(1, sizeof *s);
    if (pl_nvml_device_for_bus_id(pci_bus_id, &s->dev) != 0) {
        pl_snprintf(why, whylen, "NVML does not know the GPU at PCI bus id %s", pci_bus_id);
        free(s);
        return NULL;
    }
    s->nvml = n;
    s->period_s = period_s;
    pthread_mutex_init(&s->lock, NULL);
    if (pthread_create(&s->thread, NULL, sampler_main, s) != 0) {
        pl_snprintf(why, whylen, "cannot start the telemetry thread");
        pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
    }
    return s;
}

void pl_sampler_begin_window(pl_sampler *s)
{
    pthread_mutex_lock(&s->lock);
    memset(&s->window, 0, sizeof s->window);
    pthread_mutex_unlock(&s->lock);
    sample_once(s); /* a short window still gets one reading */
}

void pl_sampler_end_window(pl_sampler *s, pl_telemetry *out)
{
    sample_once(s);
    pthread_mutex_lock(&s->lock);
    *out = s->window;
    pthread_mutex_unlock(&s->lock);
}

void pl_sampler_stop(pl_sampler *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->stop = 1;
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
