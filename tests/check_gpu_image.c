/* SPDX-License-Identifier: Apache-2.0 */
/* check_gpu_image.c: the message sproj_init gives for a GPU the library has no kernel image for (no GPU needed:
 * the CUDA side only fills the device description this message is made from). */
#include <string.h>
#include "testutil.h"
#include "../src/core/internal.h"

static struct sproj_cuda_device_info gpu(int result, const char *error)
{
  struct sproj_cuda_device_info info;
  memset(&info, 0, sizeof info);
  strcpy(info.name, "NVIDIA GeForce GTX 1080");
  info.major = 6;
  info.minor = 1;
  info.result = result;
  strcpy(info.error, error);
  return info;
}

START_TEST(test_image_present)
{
  struct sproj_cuda_device_info info = gpu(SPROJ_CUDA_IMAGE_OK, "");
  sproj_fail(SPROJ_ERR_DIMS, "earlier", "an earlier message");
  ck_assert_int_eq(sproj_cuda_image_status(0, &info), SPROJ_OK);
  /* success leaves the thread's last message alone */
  ck_assert_str_eq(sproj_last_error(), "earlier: an earlier message");
}
END_TEST

START_TEST(test_image_missing)
{
  struct sproj_cuda_device_info info = gpu(SPROJ_CUDA_IMAGE_MISSING, "cudaErrorNoKernelImageForDevice");
  ck_assert_int_eq(sproj_cuda_image_status(2, &info), SPROJ_ERR_NO_DEVICE);
  const char *msg = sproj_last_error();
  /* the message names the call, the GPU, its compute capability, the CUDA error and the configure option */
  const char *head = "sproj_init: GPU 2 (NVIDIA GeForce GTX 1080, compute capability 6.1)";
  ck_assert_msg(strncmp(msg, head, strlen(head)) == 0, "message: %s", msg);
  ck_assert_msg(strstr(msg, "cudaErrorNoKernelImageForDevice") != NULL, "message: %s", msg);
  ck_assert_msg(strstr(msg, "--with-cuda-arch including 61") != NULL, "message: %s", msg);
  ck_assert_msg(strstr(msg, "compute capabilities ") != NULL, "message: %s", msg);
}
END_TEST

START_TEST(test_check_failed)
{
  struct sproj_cuda_device_info info = gpu(SPROJ_CUDA_IMAGE_ERROR, "cudaErrorDevicesUnavailable");
  ck_assert_int_eq(sproj_cuda_image_status(0, &info), SPROJ_ERR_NO_DEVICE);
  const char *msg = sproj_last_error();
  ck_assert_msg(strstr(msg, "GPU 0 (NVIDIA GeForce GTX 1080, compute capability 6.1)") != NULL, "message: %s", msg);
  ck_assert_msg(strstr(msg, "cudaErrorDevicesUnavailable") != NULL, "message: %s", msg);
}
END_TEST

START_TEST(test_init_checks_gpus)
{
  /* on this machine's devices the check passes (every GPU has an image, or there is none) and init proceeds */
  ck_assert_int_eq(tu_init(1, -1), SPROJ_OK);
  ck_assert_int_eq(sproj_shutdown(), SPROJ_OK);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("gpu kernel image check");
  TCase *tc = tcase_create("message");
  tcase_add_test(tc, test_image_present);
  tcase_add_test(tc, test_image_missing);
  tcase_add_test(tc, test_check_failed);
  tcase_add_test(tc, test_init_checks_gpus);
  suite_add_tcase(s, tc);
  return tu_run(s);
}
