#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "core/failure.h"

/* Real texts (PyTorch 2.x, NCCL 2.19-2.21, Ultralytics 8.1, nvidia-smi). */
#define TB_ILLEGAL                                                                                     \
        "Traceback (most recent call last):\n"                                                         \
        "  File \"/home/ana/yolo/train.py\", line 88, in <module>\n"                                   \
        "    loss.backward()\n"                                                                        \
        "  File \"/opt/conda/lib/python3.10/site-packages/torch/_tensor.py\", line 522, in backward\n" \
        "    torch.autograd.backward(\n"                                                               \
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"                         \
        "CUDA kernel errors might be asynchronously reported at some other API call, so the "          \
        "stacktrace below might be incorrect.\n"                                                       \
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1.\n"                                     \
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"

#define NCCL_WATCHDOG                                                                                  \
        "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: " \
        "WorkNCCL(SeqNum=4521, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "  \
        "600102 milliseconds before timing out.\n"

#define OOM_NEW                                                                                        \
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "   \
        "capacity of 23.65 GiB of which 1.12 GiB is free. Including non-PyTorch memory, this process " \
        "has 22.52 GiB memory in use. Of the allocated memory 21.87 GiB is allocated by PyTorch, and " \
        "205.12 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is "    \
        "large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  " \
        "See documentation for Memory Management  "                                                    \
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n"

#define OOM_OLD                                                                                       \
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.79 "  \
        "GiB total capacity; 6.91 GiB already allocated; 13.25 MiB free; 7.02 GiB reserved in total " \
        "by PyTorch)\n"

#define NCCL_UNHANDLED                                                                              \
        "torch.distributed.DistBackendError: NCCL error in: "                                       \
        "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled cuda error (run with " \
        "NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n"                                       \
        "ncclUnhandledCudaError: Call to CUDA function failed.\n"                                   \
        "Last error:\n"                                                                             \
        "Cuda failure 'an illegal memory access was encountered'\n"

#define TB_ZERODIV                                                  \
        "Traceback (most recent call last):\n"                      \
        "  File \"/home/ana/exp/train.py\", line 41, in <module>\n" \
        "    main()\n"                                              \
        "  File \"/home/ana/exp/train.py\", line 37, in main\n"     \
        "    lr = base_lr / warmup_steps\n"                         \
        "         ~~~~~~~~^~~~~~~~~~~~~~\n"                         \
        "ZeroDivisionError: division by zero\n"

static struct gw_failure_verdict run(enum gw_attempt_end end, int status, const char *log,
                                     const struct gw_gpu_event *ev, size_t n_ev) {
        struct gw_failure_input in = {
                .end = end,
                .status = status,
                .tail = log,
                .tail_len = log ? strlen(log) : 0,
                .events = ev,
                .n_events = n_ev,
        };
        struct gw_failure_verdict v;

        memset(&v, 0x5a, sizeof(v));
        assert_int_equal(gw_failure_classify(&in, &v), 0);
        return v;
}

static void expect(const struct gw_failure_verdict *v, enum gw_failure_class cls, const char *evidence, unsigned line) {
        assert_string_equal(gw_failure_class_name(v->cls), gw_failure_class_name(cls));
        assert_string_equal(v->evidence, evidence);
        assert_int_equal(v->line, line);
}

static void cuda_error_in_traceback(void **state) {
        struct gw_failure_verdict v = run(GW_END_EXITED, 1, "Epoch 3/100\n" TB_ILLEGAL, NULL, 0);

        /* The header is not the cause; the exception line is. */
        expect(&v, GW_FAILURE_CUDA_ERROR, "RuntimeError: CUDA error: an illegal memory access was encountered", 7);
        assert_int_equal(v.gpu, -1);
        assert_int_equal(v.drain_mask, 0);
        assert_int_equal(v.offset, strstr("Epoch 3/100\n" TB_ILLEGAL, "RuntimeError") - ("Epoch 3/100\n" TB_ILLEGAL));

        v = run(GW_END_SIGNALED, SIGABRT,
                "terminate called after throwing an instance of 'c10::Error'\n"
                "  what():  CUDA error: unspecified launch failure\n",
                NULL, 0);
        expect(&v, GW_FAILURE_CUDA_ERROR, "what():  CUDA error: unspecified launch failure", 2);

        v = run(GW_END_EXITED, 1,
                "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, "
                "opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`\n",
                NULL, 0);
        assert_int_equal(v.cls, GW_FAILURE_CUDA_ERROR);
        v = run(GW_END_EXITED, 1, "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED\n", NULL, 0);
        assert_int_equal(v.cls, GW_FAILURE_CUDA_ERROR);
}

static void first_fatal_line_wins(void **state) {
        /* A CUDA error on rank 1, then the watchdog on rank 0: the CUDA error is the cause. */
        const char *log = "[rank1]: Traceback (most recent call last):\n"
                          "[rank1]:   File \"train.py\", line 12, in <module>\n"
                          "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n" NCCL_WATCHDOG
                          "[rank0]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 0] NCCL communicator was aborted "
                          "on rank 0.\n";
        struct gw_failure_verdict v = run(GW_END_EXITED, 1, log, NULL, 0);

        expect(&v, GW_FAILURE_CUDA_ERROR, "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered",
               3);

        /* The other way round: the watchdog fired first. */
        v = run(GW_END_EXITED, 1, NCCL_WATCHDOG "RuntimeError: CUDA error: unspecified launch failure\n", NULL, 0);
        assert_int_equal(v.cls, GW_FAILURE_NCCL_ERROR);
        assert_int_equal(v.line, 1);

        v = run(GW_END_EXITED, 1, NCCL_UNHANDLED, NULL, 0);
        assert_int_equal(v.cls, GW_FAILURE_NCCL_ERROR);
        assert_int_equal(v.line, 1);
        assert_non_null(strstr(v.evidence, "NCCL error in:"));
}

static void oom(void **state) {
        struct gw_failure_verdict v = run(GW_END_EXITED, 1, TB_ZERODIV OOM_NEW, NULL, 0);

        assert_int_equal(v.cls, GW_FAILURE_OOM);
        assert_int_equal(v.line, 8);
        /* Cut to fit after the last whole sentence, and marked as cut. */
        assert_string_equal(v.evidence,
                            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
                            "total capacity of 23.65 GiB of which 1.12 GiB is free. Including non-PyTorch memory, "
                            "this process has 22.52 GiB memory in use. \xe2\x80\xa6");

        v = run(GW_END_EXITED, 1, OOM_OLD, NULL, 0);
        assert_int_equal(v.cls, GW_FAILURE_OOM);
        /* Not a cuda_error: the specific pattern comes first in the table. */
        v = run(GW_END_EXITED, 1, "RuntimeError: CUDA error: out of memory\n", NULL, 0);
        assert_int_equal(v.cls, GW_FAILURE_OOM);
        v = run(GW_END_EXITED, 1,
                "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`\n", NULL, 0);
        assert_int_equal(v.cls, GW_FAILURE_OOM);
}

/* Ultralytics' AutoBatch (batch=-1), as utils/autobatch.py and utils/torch_utils.py
 * profile_ops print it (8.3): each batch size that ran out of memory leaves the exception's
 * text as a bare line, then AutoBatch picks a size and training goes on. */
#define AUTOBATCH_PROBE                                                                               \
        "\x1b[34m\x1b[1mAutoBatch: \x1b[0mComputing optimal batch size for imgsz=640 at 60.0% CUDA "  \
        "memory utilization.\n"                                                                       \
        "\x1b[34m\x1b[1mAutoBatch: \x1b[0mCUDA:0 (NVIDIA A10) 22.07G total, 0.11G reserved, 0.10G "   \
        "allocated, 21.86G free\n"                                                                    \
        "      Params      GFLOPs  GPU_mem (GB)  forward (ms) backward (ms)                   input"  \
        "                  output\n"                                                                  \
        "    25902640       79.31         1.010         28.38         51.94        (1, 3, 640, 640)"  \
        "                    list\n"                                                                  \
        "CUDA out of memory. Tried to allocate 1.56 GiB. GPU 0 has a total capacity of 22.07 GiB of " \
        "which 1.02 GiB is free.\n"                                                                   \
        "CUDA out of memory. Tried to allocate 3.12 GiB. GPU 0 has a total capacity of 22.07 GiB of " \
        "which 1.02 GiB is free.\n"                                                                   \
        "\x1b[34m\x1b[1mAutoBatch: \x1b[0mUsing batch-size 8 for CUDA:0 13.52G/22.07G (61%) \xe2\x9c\x85\n"

static void autobatch_probe_is_not_the_cause(void **state) {
        /* A crash in epoch 1, its traceback after AutoBatch's probes: a cuda_error (retried),
         * not the probes' out-of-memory lines (retried only if a leak explains it). */
        struct gw_failure_verdict v = run(GW_END_EXITED, 1,
                                          AUTOBATCH_PROBE "Starting training for 100 epochs...\n"
                                                          "      1/100      13.4G      1.187\n" TB_ILLEGAL,
                                          NULL, 0);
        expect(&v, GW_FAILURE_CUDA_ERROR, "RuntimeError: CUDA error: an illegal memory access was encountered", 15);
        /* AutoBatch gave up on an error of its own: still a probe. */
        v = run(GW_END_EXITED, 1,
                "AutoBatch: Computing optimal batch size for imgsz=640 at 60.0% CUDA memory utilization.\n"
                "AutoBatch: WARNING error detected: CUDA out of memory. Tried to allocate 20.00 MiB,  using "
                "default batch-size 16.\n" TB_ZERODIV,
                NULL, 0);
        expect(&v, GW_FAILURE_USER_ERROR, "ZeroDivisionError: division by zero", 9);
        /* Killed while probing (no line after the probes): that out-of-memory is the cause. */
        v = run(GW_END_EXITED, 1,
                "AutoBatch: Computing optimal batch size for imgsz=640 at 60.0% CUDA memory utilization.\n"
                "CUDA out of memory. Tried to allocate 1.56 GiB.\n",
                NULL, 0);
        expect(&v, GW_FAILURE_OOM, "CUDA out of memory. Tried to allocate 1.56 GiB.", 2);
        /* An out-of-memory after AutoBatch chose is the job's own. */
        v = run(GW_END_EXITED, 1, AUTOBATCH_PROBE OOM_NEW, NULL, 0);
        assert_int_equal(v.cls, GW_FAILURE_OOM);
        assert_int_equal(v.line, 8);
}

static void gpu_fault_from_events(void **state) {
        const struct gw_gpu_event xid79[] = { { GW_GPU_EVENT_XID, 2, 63 }, { GW_GPU_EVENT_XID, 3, 79 } };
        struct gw_failure_verdict v = run(GW_END_EXITED, 1, TB_ILLEGAL, xid79, 2);

        expect(&v, GW_FAILURE_GPU_FAULT, "Xid 79 on GPU 3", 0);
        assert_int_equal(v.gpu, 3);
        assert_int_equal(v.xid, 79);
        assert_int_equal(v.drain_mask, UINT64_C(1) << 3); /* Xid 63 is not drain-worthy */

        const struct gw_gpu_event dbe[] = { { GW_GPU_EVENT_ECC_DBE, 1, 0 }, { GW_GPU_EVENT_LOST, 5, 0 } };
        v = run(GW_END_SIGNALED, SIGSEGV, "", dbe, 2);
        expect(&v, GW_FAILURE_GPU_FAULT, "double-bit ECC error on GPU 1", 0);
        assert_int_equal(v.drain_mask, (UINT64_C(1) << 1) | (UINT64_C(1) << 5));
        v = run(GW_END_EXITED, 1, NULL, dbe + 1, 1);
        expect(&v, GW_FAILURE_GPU_FAULT, "GPU 5 is lost", 0);

        /* Every default drain Xid drains; 13, 31, 43, 94 are the job's fault. */
        for (unsigned x = 1; x < 160; x++) {
                const struct gw_gpu_event e = { GW_GPU_EVENT_XID, 0, x };
                bool drain = x == 48 || x == 64 || x == 74 || x == 79 || x == 95;
                bool job = x == 13 || x == 31 || x == 43 || x == 94;

                v = run(GW_END_EXITED, 1, "", &e, 1);
                assert_int_equal(v.drain_mask, drain ? 1 : 0);
                assert_int_equal(v.cls, drain ? GW_FAILURE_GPU_FAULT
                                        : job ? GW_FAILURE_CUDA_ERROR
                                              : GW_FAILURE_USER_ERROR);
        }

        /* A job-error Xid does not outrank what the log says. */
        const struct gw_gpu_event xid31 = { GW_GPU_EVENT_XID, 0, 31 };
        v = run(GW_END_EXITED, 1, OOM_OLD, &xid31, 1);
        assert_int_equal(v.cls, GW_FAILURE_OOM);
        v = run(GW_END_EXITED, 1, TB_ZERODIV, &xid31, 1);
        expect(&v, GW_FAILURE_CUDA_ERROR, "Xid 31 on GPU 0", 0);
}

static void gpu_fault_from_log(void **state) {
        const char *log = "RuntimeError: CUDA error: unspecified launch failure\n"
                          "Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost.  Reboot "
                          "the system to recover this GPU\n";
        struct gw_failure_verdict v = run(GW_END_EXITED, 1, log, NULL, 0);

        /* Found later in the tail, but a lost GPU explains the CUDA error before it. */
        assert_int_equal(v.cls, GW_FAILURE_GPU_FAULT);
        assert_int_equal(v.line, 2);
        assert_int_equal(v.gpu, -1);
        assert_int_equal(v.drain_mask, 0);

        v = run(GW_END_EXITED, 1, "RuntimeError: CUDA error: uncorrectable ECC error encountered\n", NULL, 0);
        assert_int_equal(v.cls, GW_FAILURE_GPU_FAULT);
}

static void clean_exit_is_ok(void **state) {
        const struct gw_gpu_event xid79 = { GW_GPU_EVENT_XID, 2, 79 };
        struct gw_failure_verdict v = run(GW_END_EXITED, 0, "100 epochs completed in 3.412 hours.\n", NULL, 0);

        expect(&v, GW_FAILURE_OK, "exit 0", 0);
        /* An AutoBatch probe's OOM in the tail does not fail a finished run ... */
        v = run(GW_END_EXITED, 0, OOM_OLD "Results saved to runs/detect/train\n", NULL, 0);
        expect(&v, GW_FAILURE_OK, "exit 0", 0);
        /* ... and a GPU that fell off after the last epoch is still drained. */
        v = run(GW_END_EXITED, 0, "", &xid79, 1);
        assert_int_equal(v.cls, GW_FAILURE_OK);
        assert_int_equal(v.drain_mask, UINT64_C(1) << 2);
}

static void host_oom(void **state) {
        struct gw_failure_input in = { .end = GW_END_SIGNALED, .status = SIGKILL, .oom_killed = true };
        struct gw_failure_verdict v;

        assert_int_equal(gw_failure_classify(&in, &v), 0);
        expect(&v, GW_FAILURE_HOST_OOM, "killed by the kernel OOM killer: signal 9 (SIGKILL)", 0);

        in = (struct gw_failure_input){ .end = GW_END_EXITED, .status = 137, .oom_kills = 2 };
        assert_int_equal(gw_failure_classify(&in, &v), 0);
        expect(&v, GW_FAILURE_HOST_OOM, "killed by the kernel OOM killer: exit 137, memory cgroup oom_kill +2", 0);

        /* A SIGKILL with no sign of the OOM killer is somebody else's kill. */
        v = run(GW_END_SIGNALED, SIGKILL, "", NULL, 0);
        expect(&v, GW_FAILURE_KILLED,
               "killed by SIGKILL from outside gpuward (not a gpuward stop; whether the kernel's OOM killer did is not "
               "known)",
               0);

        v = run(GW_END_EXITED, 1, "RuntimeError: DataLoader worker (pid 48213) is killed by signal: Killed.\n", NULL,
                0);
        assert_int_equal(v.cls, GW_FAILURE_HOST_OOM);
        assert_int_equal(v.line, 1);
}

/* What the daemon knows of a SIGKILL: who sent it, what the OOM counters say. */
static void sigkill_from_outside(void **state) {
        struct gw_failure_input in = { .end = GW_END_SIGNALED, .status = SIGKILL, .oom_counted = true };
        struct gw_failure_verdict v;

        assert_int_equal(gw_failure_classify(&in, &v), 0);
        expect(&v, GW_FAILURE_KILLED,
               "killed by SIGKILL from outside gpuward (not a gpuward stop, not the kernel's OOM killer: the cgroup's "
               "oom_kill count did not change)",
               0);

        /* The cgroup's count says more than the host's: another process's OOM kill is not it. */
        in.host_oom_counted = true;
        in.host_oom_kills = 3;
        assert_int_equal(gw_failure_classify(&in, &v), 0);
        assert_int_equal(v.cls, GW_FAILURE_KILLED);

        in = (struct gw_failure_input){ .end = GW_END_SIGNALED, .status = SIGKILL, .host_oom_counted = true };
        assert_int_equal(gw_failure_classify(&in, &v), 0);
        expect(&v, GW_FAILURE_KILLED,
               "killed by SIGKILL from outside gpuward (not a gpuward stop, not the kernel's OOM killer: the host's "
               "oom_kill count did not change)",
               0);

        /* No cgroup count, and the host's OOM killer was at work meanwhile. */
        in.host_oom_kills = 1;
        assert_int_equal(gw_failure_classify(&in, &v), 0);
        assert_int_equal(v.cls, GW_FAILURE_HOST_OOM);
        assert_non_null(strstr(v.evidence, "host oom_kill +1"));

        /* The cgroup's own count grew: the OOM killer. */
        in = (struct gw_failure_input){ .end = GW_END_SIGNALED,
                                        .status = SIGKILL,
                                        .oom_counted = true,
                                        .oom_kills = 1 };
        assert_int_equal(gw_failure_classify(&in, &v), 0);
        assert_int_equal(v.cls, GW_FAILURE_HOST_OOM);

        /* gpuward's own SIGKILL outside a stop (rogue_policy=kill of its main process). */
        in = (struct gw_failure_input){ .end = GW_END_SIGNALED,
                                        .status = SIGKILL,
                                        .host_oom_counted = true,
                                        .host_oom_kills = 2,
                                        .sigkill_why = "its main process ran on GPU 1" };
        assert_int_equal(gw_failure_classify(&in, &v), 0);
        expect(&v, GW_FAILURE_USER_ERROR, "killed by SIGKILL from gpuward: its main process ran on GPU 1", 0);

        /* A stop of gpuward's is still that, whatever the signal. */
        in = (struct gw_failure_input){ .end = GW_END_CANCELLED, .status = SIGKILL };
        assert_int_equal(gw_failure_classify(&in, &v), 0);
        assert_int_equal(v.cls, GW_FAILURE_CANCELLED);

        /* Other signals are the job's own (SIGSEGV) or unexplained: as before. */
        in = (struct gw_failure_input){ .end = GW_END_SIGNALED, .status = SIGTERM, .oom_counted = true };
        assert_int_equal(gw_failure_classify(&in, &v), 0);
        expect(&v, GW_FAILURE_USER_ERROR, "killed by signal 15 (SIGTERM)", 0);

        /* A fatal log line still comes first. */
        v = run(GW_END_SIGNALED, SIGKILL, OOM_NEW, NULL, 0);
        assert_int_equal(v.cls, GW_FAILURE_OOM);
        assert_string_equal(gw_failure_class_name(GW_FAILURE_KILLED), "killed");
        assert_int_equal(gw_failure_class_from_name("killed"), GW_FAILURE_KILLED);
}

static void user_errors(void **state) {
        struct gw_failure_verdict v = run(GW_END_EXITED, 1, "Epoch 1/10\n" TB_ZERODIV, NULL, 0);

        expect(&v, GW_FAILURE_USER_ERROR, "ZeroDivisionError: division by zero", 8);

        v = run(GW_END_EXITED, 2,
                "usage: train.py [-h] --data DATA\ntrain.py: error: the following arguments "
                "are required: --data\n",
                NULL, 0);
        expect(&v, GW_FAILURE_USER_ERROR, "exit 2", 0);
        v = run(GW_END_SIGNALED, SIGSEGV, NULL, NULL, 0);
        expect(&v, GW_FAILURE_USER_ERROR, "killed by signal 11 (SIGSEGV)", 0);
        v = run(GW_END_SIGNALED, 40, NULL, NULL, 0);
        expect(&v, GW_FAILURE_USER_ERROR, "killed by signal 40", 0);

        /* A label out of range trips a device-side assert: a CUDA error, but the code's. */
        v = run(GW_END_EXITED, 1,
                "../aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: block: "
                "[0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.\n"
                "RuntimeError: CUDA error: device-side assert triggered\n" NCCL_WATCHDOG,
                NULL, 0);
        expect(&v, GW_FAILURE_USER_ERROR, "RuntimeError: CUDA error: device-side assert triggered", 2);
        v = run(GW_END_EXITED, 1, "RuntimeError: CUDA error: invalid device ordinal\n", NULL, 0);
        assert_int_equal(v.cls, GW_FAILURE_USER_ERROR);
}

static void tracebacks(void **state) {
        /* torchrun's per-rank prefixes, interleaved with another rank's output. */
        const char *ddp = "[rank1]: Traceback (most recent call last):\n"
                          "[rank0]: Epoch 4: 12%\n"
                          "[rank1]:   File \"/srv/train.py\", line 9, in <module>\n"
                          "[rank1]:     cfg[\"lr\"]\n"
                          "[rank0]: Epoch 4: 13%\n"
                          "[rank1]: KeyError: 'lr'\n";
        struct gw_failure_verdict v = run(GW_END_EXITED, 1, ddp, NULL, 0);

        expect(&v, GW_FAILURE_USER_ERROR, "[rank1]: KeyError: 'lr'", 6);

        /* Chained: the last traceback is the one that ended the process. */
        v = run(GW_END_EXITED, 1,
                "Traceback (most recent call last):\n"
                "  File \"data.py\", line 3, in load\n"
                "FileNotFoundError: [Errno 2] No such file or directory: 'coco.yaml'\n"
                "\n"
                "The above exception was the direct cause of the following exception:\n"
                "\n"
                "Traceback (most recent call last):\n"
                "  File \"train.py\", line 5, in <module>\n"
                "RuntimeError: Dataset 'coco.yaml' error\n",
                NULL, 0);
        expect(&v, GW_FAILURE_USER_ERROR, "RuntimeError: Dataset 'coco.yaml' error", 7);

        /* The tail ends inside the traceback: the header is all there is. */
        v = run(GW_END_SIGNALED, SIGTERM, "Traceback (most recent call last):\n  File \"x.py\", line 1\n", NULL, 0);
        expect(&v, GW_FAILURE_USER_ERROR, "Traceback (most recent call last):", 1);
}

static void daemon_actions_first(void **state) {
        const struct gw_gpu_event xid79 = { GW_GPU_EVENT_XID, 4, 79 };
        struct gw_failure_verdict v = run(GW_END_TIMEOUT, 0, TB_ILLEGAL, &xid79, 1);

        expect(&v, GW_FAILURE_TIMEOUT, "stopped by gpuward: time limit reached", 0);
        assert_int_equal(v.drain_mask, UINT64_C(1) << 4);
        v = run(GW_END_CANCELLED, 0, OOM_OLD, NULL, 0);
        expect(&v, GW_FAILURE_CANCELLED, "stopped by gpuward: cancelled", 0);
        v = run(GW_END_RECLAIMED, 0, NULL, NULL, 0);
        expect(&v, GW_FAILURE_RECLAIMED, "stopped by gpuward: idle GPUs reclaimed", 0);
}

static void lost(void **state) {
        struct gw_failure_input in = { .lost = true, .end = GW_END_EXITED, .status = 0 };
        struct gw_failure_verdict v;

        /* No exit status: status 0 means nothing. */
        assert_int_equal(gw_failure_classify(&in, &v), 0);
        expect(&v, GW_FAILURE_LOST, "lost: gpuward restarted or the host rebooted while the job ran", 0);
        in.lost_why = "its supervisor ended without telling how the job ended";
        assert_int_equal(gw_failure_classify(&in, &v), 0);
        expect(&v, GW_FAILURE_LOST, "lost: its supervisor ended without telling how the job ended", 0);
        in.lost_why = NULL;
        /* The log still tells what really happened while the daemon was away. */
        in.tail = TB_ILLEGAL;
        in.tail_len = strlen(TB_ILLEGAL);
        assert_int_equal(gw_failure_classify(&in, &v), 0);
        assert_int_equal(v.cls, GW_FAILURE_CUDA_ERROR);
        /* A traceback without a known cause does not make a lost job the user's fault. */
        in.tail = TB_ZERODIV;
        in.tail_len = strlen(TB_ZERODIV);
        assert_int_equal(gw_failure_classify(&in, &v), 0);
        assert_int_equal(v.cls, GW_FAILURE_LOST);
        /* Lost while gpuward was stopping it (a recorded cancel, then a restart; or an exits
         * journal that could not be written): the stop explains the end, and the class is one
         * that is never retried. */
        in.end = GW_END_CANCELLED;
        assert_int_equal(gw_failure_classify(&in, &v), 0);
        expect(&v, GW_FAILURE_CANCELLED, "stopped by gpuward: cancelled", 0);
        in.end = GW_END_TIMEOUT;
        assert_int_equal(gw_failure_classify(&in, &v), 0);
        expect(&v, GW_FAILURE_TIMEOUT, "stopped by gpuward: time limit reached", 0);
}

/* A node step that could not do the node's part (exit 69 with its mark line) is the node's
 * failure; the same exit without the line, the line without that exit, or either without a
 * node step is the command's own. */
static void node_step_failed(void **state) {
        static const char log[] = "staging dataset: coco on gpu1\n"
                                  "\x1b[31m" GW_FAILURE_NODE_MARK "an older line\x1b[0m\n" GW_FAILURE_NODE_MARK
                                  "no dataset stager listening at /run/gpuward/stage.sock\n";
        struct gw_failure_input in = { .end = GW_END_EXITED,
                                       .status = GW_FAILURE_NODE_EXIT,
                                       .node_step = true,
                                       .node = "gpu1",
                                       .tail = log,
                                       .tail_len = strlen(log) };
        struct gw_failure_verdict v;

        (void) state;
        assert_int_equal(gw_failure_classify(&in, &v), 0);
        expect(&v, GW_FAILURE_LOST, "node gpu1: no dataset stager listening at /run/gpuward/stage.sock", 3);
        in.node = NULL;
        assert_int_equal(gw_failure_classify(&in, &v), 0);
        expect(&v, GW_FAILURE_LOST, "its node: no dataset stager listening at /run/gpuward/stage.sock", 3);
        /* The dataset's own problem (65), or the command's own 69 without the line. */
        in.status = 65;
        assert_int_equal(gw_failure_classify(&in, &v), 0);
        assert_int_equal(v.cls, GW_FAILURE_USER_ERROR);
        in.status = GW_FAILURE_NODE_EXIT;
        in.tail = "staging dataset: coco on gpu1\n";
        in.tail_len = strlen(in.tail);
        assert_int_equal(gw_failure_classify(&in, &v), 0);
        expect(&v, GW_FAILURE_USER_ERROR, "exit 69", 0);
        /* No node step wrapped the command: the line is only text. */
        in.tail = log;
        in.tail_len = strlen(log);
        in.node_step = false;
        assert_int_equal(gw_failure_classify(&in, &v), 0);
        assert_int_equal(v.cls, GW_FAILURE_USER_ERROR);
        /* A GPU that fell off the bus still wins: it is drained. */
        struct gw_gpu_event ev = { .kind = GW_GPU_EVENT_XID, .gpu = 0, .xid = 79 };
        in.node_step = true;
        in.events = &ev;
        in.n_events = 1;
        assert_int_equal(gw_failure_classify(&in, &v), 0);
        assert_int_equal(v.cls, GW_FAILURE_GPU_FAULT);
}

static void ansi_and_carriage_returns(void **state) {
        /* Ultralytics: colours, tqdm redraws with \r, CRLF, an erase-line escape. */
        const char log[] =
                "\x1b[34m\x1b[1mtrain: \x1b[0mScanning /data/coco/labels/train2017.cache... 117266 images\r\n"
                "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
                "\r      3/100      3.41G      1.234      1.567      1.123         45        640:   1%|          "
                "| 1/127 [00:01<02:10,  1.03s/it]"
                "\r      3/100      3.41G      1.234      1.567      1.123         45        640:   2%|▏         "
                "| 2/127 [00:02<02:09,  1.03s/it]\x1b[K"
                "\r\x1b[31mRuntimeError\x1b[0m: \x1b]8;;https://x\x07"
                "CUDA error: an illegal memory access was "
                "encountered\x1b]8;;\x1b\\\r\n";
        struct gw_failure_verdict v = run(GW_END_EXITED, 1, log, NULL, 0);

        expect(&v, GW_FAILURE_CUDA_ERROR, "RuntimeError: CUDA error: an illegal memory access was encountered", 5);
        assert_int_equal(v.offset, strstr(log, "\r\x1b[31m") + 1 - log);
        assert_null(strchr(v.evidence, '\x1b'));
}

static void only_the_last_200_lines(void **state) {
        static char log[64 * 1024];
        size_t k = 0;

        k += (size_t) snprintf(log + k, sizeof(log) - k, "RuntimeError: CUDA error: unspecified launch failure\n");
        for (int i = 0; i < 199; i++)
                k += (size_t) snprintf(log + k, sizeof(log) - k, "step %d\n", i);
        struct gw_failure_verdict v = run(GW_END_EXITED, 1, log, NULL, 0);
        expect(&v, GW_FAILURE_CUDA_ERROR, "RuntimeError: CUDA error: unspecified launch failure", 1);

        (void) snprintf(log + k, sizeof(log) - k, "step 199\n");
        v = run(GW_END_EXITED, 1, log, NULL, 0);
        expect(&v, GW_FAILURE_USER_ERROR, "exit 1", 0);
}

static void tail_is_not_nul_terminated(void **state) {
        const char buf[] = "loss 0.3\nRuntimeError: CUDA error: unspecified launch failure\n";
        struct gw_failure_input in = { .end = GW_END_EXITED, .status = 1, .tail = buf, .tail_len = 25 };
        struct gw_failure_verdict v;

        assert_int_equal(gw_failure_classify(&in, &v), 0);
        assert_int_equal(v.cls, GW_FAILURE_USER_ERROR);
        in.tail_len = sizeof(buf) - 1;
        assert_int_equal(gw_failure_classify(&in, &v), 0);
        assert_int_equal(v.cls, GW_FAILURE_CUDA_ERROR);
        assert_int_equal(v.line, 2);
}

static void custom_patterns(void **state) {
        const struct gw_failure_pattern mine[] = {
                { GW_FAILURE_NCCL_ERROR, "NCCL WARN" },
                { GW_FAILURE_GPU_FAULT, "Xid" },
        };
        const char *log = "node1:4242:4301 [0] NCCL WARN Cuda failure 'an illegal memory access'\n"
                          "RuntimeError: CUDA error: an illegal memory access was encountered\n";
        struct gw_failure_input in = {
                .end = GW_END_EXITED,
                .status = 1,
                .tail = log,
                .tail_len = strlen(log),
                .patterns = mine,
                .n_patterns = 1,
        };
        struct gw_failure_verdict v;
        char why[128];

        assert_int_equal(gw_failure_classify(&in, &v), 0);
        expect(&v, GW_FAILURE_NCCL_ERROR, "node1:4242:4301 [0] NCCL WARN Cuda failure 'an illegal memory access'", 1);
        /* Replaced, not extended: the defaults no longer apply. */
        in.tail = strchr(log, '\n') + 1;
        in.tail_len = strlen(in.tail);
        assert_int_equal(gw_failure_classify(&in, &v), 0);
        assert_int_equal(v.cls, GW_FAILURE_USER_ERROR);

        /* A custom drain list. */
        const unsigned drains[] = { 119 };
        const struct gw_gpu_event gsp = { GW_GPU_EVENT_XID, 1, 119 }, x79 = { GW_GPU_EVENT_XID, 1, 79 };
        in = (struct gw_failure_input){ .end = GW_END_EXITED,
                                        .status = 1,
                                        .events = &gsp,
                                        .n_events = 1,
                                        .drain_xids = drains,
                                        .n_drain_xids = 1 };
        assert_int_equal(gw_failure_classify(&in, &v), 0);
        expect(&v, GW_FAILURE_GPU_FAULT, "Xid 119 on GPU 1", 0);
        in.events = &x79;
        assert_int_equal(gw_failure_classify(&in, &v), 0);
        assert_int_equal(v.cls, GW_FAILURE_USER_ERROR);

        size_t n;
        const struct gw_failure_pattern *def = gw_failure_default_patterns(&n);
        assert_true(n >= 20);
        assert_int_equal(gw_failure_patterns_check(def, n, why, sizeof(why)), 0);
        assert_int_equal(gw_failure_patterns_check(mine, 2, why, sizeof(why)), 0);
        const struct gw_failure_pattern bad1[] = { { GW_FAILURE_OOM, "x" }, { GW_FAILURE_OK, "done" } };
        assert_int_equal(gw_failure_patterns_check(bad1, 2, why, sizeof(why)), -EINVAL);
        assert_string_equal(why, "pattern 2: class ok cannot come from a log");
        const struct gw_failure_pattern bad2[] = { { GW_FAILURE_OOM, "" } };
        assert_int_equal(gw_failure_patterns_check(bad2, 1, why, sizeof(why)), -EINVAL);
        assert_string_equal(why, "pattern 1 (oom): empty text");
        const struct gw_failure_pattern bad3[] = { { (enum gw_failure_class) 42, "x" } };
        assert_int_equal(gw_failure_patterns_check(bad3, 1, why, sizeof(why)), -EINVAL);
}

static void long_line_cut_on_utf8_boundary(void **state) {
        static char log[2048];
        size_t k = (size_t) snprintf(log, sizeof(log), "RuntimeError: CUDA error: ");
        struct gw_failure_verdict v;

        while (k + 3 < sizeof(log) - 2) {
                memcpy(log + k, "\xc3\xa9", 2); /* é */
                k += 2;
        }
        log[k] = '\0';
        for (int shift = 0; shift < 2; shift++) {
                v = run(GW_END_EXITED, 1, log + shift, NULL, 0);
                size_t n = strlen(v.evidence);
                assert_true(n < GW_FAILURE_EVIDENCE_MAX);
                assert_true(n >= GW_FAILURE_EVIDENCE_MAX - 6);
                /* No blank to cut at: on a character boundary (é's second byte), then "…". */
                assert_int_equal((unsigned char) v.evidence[n - 4], 0xa9);
                assert_string_equal(v.evidence + n - 3, "\xe2\x80\xa6");
        }
}

static void long_line_cut_at_a_word(void **state) {
        static char log[1024];
        size_t k = (size_t) snprintf(log, sizeof(log), "RuntimeError: CUDA error: ");
        struct gw_failure_verdict v;

        (void) state;
        while (k + 12 < sizeof(log))
                k += (size_t) snprintf(log + k, sizeof(log) - k, "allocated, ");
        v = run(GW_END_EXITED, 1, log, NULL, 0);
        size_t n = strlen(v.evidence);
        assert_true(n < GW_FAILURE_EVIDENCE_MAX);
        /* At a word's end, the comma before the cut dropped, then "…". */
        assert_true(n > 4 && memcmp(v.evidence + n - 12, "allocated\xe2\x80\xa6", 12) == 0);
}

static void names_and_bad_input(void **state) {
        struct gw_failure_input in = { .end = (enum gw_attempt_end) 9 };
        struct gw_failure_verdict v = { .cls = GW_FAILURE_OOM };

        for (int c = 0; c < _GW_FAILURE_CLASS_MAX; c++) {
                const char *n = gw_failure_class_name((enum gw_failure_class) c);
                assert_non_null(n);
                assert_int_equal(gw_failure_class_from_name(n), c);
        }
        assert_int_equal(gw_failure_class_from_name("CUDA_Error"), GW_FAILURE_CUDA_ERROR);
        assert_int_equal(gw_failure_class_from_name("cuda"), _GW_FAILURE_CLASS_INVALID);
        assert_int_equal(gw_failure_class_from_name(NULL), _GW_FAILURE_CLASS_INVALID);
        assert_null(gw_failure_class_name(_GW_FAILURE_CLASS_MAX));
        assert_null(gw_failure_class_name(_GW_FAILURE_CLASS_INVALID));

        assert_int_equal(gw_failure_classify(&in, &v), -EINVAL);
        assert_int_equal(v.cls, GW_FAILURE_OOM); /* untouched */
        in.end = _GW_ATTEMPT_END_INVALID;
        assert_int_equal(gw_failure_classify(&in, &v), -EINVAL);
}

static void command_not_found(void **state) {
        static const struct {
                const char *log;
                int status;
                const char *evidence;
                unsigned line;
        } cases[] = {
                { "gpuward: cannot execute 'trian.py': No such file or directory\n", 127, "command not found: trian.py",
                  1 },
                { "starting\nbash: line 1: pyhton3: command not found\n", 127, "command not found: pyhton3", 2 },
                { "sh: 1: nvidia-smi2: not found\n", 127, "command not found: nvidia-smi2", 1 },
                { "bash: ./run.sh: No such file or directory\n", 127, "command not found: ./run.sh", 1 },
                { "/usr/bin/env: 'python9': No such file or directory\n", 127, "command not found: python9", 1 },
                /* Not exit 127, or no "prog: NAME: ..." line: the status as before. */
                { "FileNotFoundError: [Errno 2] No such file or directory: 'x.csv'\n", 1, "exit 1", 0 },
                { "sh: 1: foo: not found\n", 2, "exit 2", 0 },
                { "No such file or directory\n", 127, "exit 127", 0 },
                { "hello\n", 127, "exit 127", 0 },
                { "gpuward: cannot execute './run.sh': Permission denied\n", 126, "command not executable: ./run.sh",
                  1 },
                { "bash: line 1: ./run.sh: Permission denied\n", 126, "command not executable: ./run.sh", 1 },
                { "bash: ./run.sh: Permission denied\n", 127, "exit 127", 0 },
                { "sh: 1: foo: not found\n", 126, "exit 126", 0 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct gw_failure_verdict v = run(GW_END_EXITED, cases[i].status, cases[i].log, NULL, 0);
                expect(&v, GW_FAILURE_USER_ERROR, cases[i].evidence, cases[i].line);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(cuda_error_in_traceback),
                cmocka_unit_test(first_fatal_line_wins),
                cmocka_unit_test(oom),
                cmocka_unit_test(autobatch_probe_is_not_the_cause),
                cmocka_unit_test(gpu_fault_from_events),
                cmocka_unit_test(gpu_fault_from_log),
                cmocka_unit_test(clean_exit_is_ok),
                cmocka_unit_test(host_oom),
                cmocka_unit_test(sigkill_from_outside),
                cmocka_unit_test(user_errors),
                cmocka_unit_test(tracebacks),
                cmocka_unit_test(daemon_actions_first),
                cmocka_unit_test(lost),
                cmocka_unit_test(node_step_failed),
                cmocka_unit_test(ansi_and_carriage_returns),
                cmocka_unit_test(only_the_last_200_lines),
                cmocka_unit_test(tail_is_not_nul_terminated),
                cmocka_unit_test(custom_patterns),
                cmocka_unit_test(long_line_cut_on_utf8_boundary),
                cmocka_unit_test(long_line_cut_at_a_word),
                cmocka_unit_test(names_and_bad_input),
                cmocka_unit_test(command_not_found),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
