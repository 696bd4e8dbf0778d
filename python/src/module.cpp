// tandem._tandem: the compiled half of the tandem package (python/tandem/ is the other half).
#include "arrow.hpp"
#include "common.hpp"

PYBIND11_MODULE(_tandem, m) {
  using namespace tandem::python;
  m.doc() = "tandem's library bound for Python; use the tandem package, not this module.";
  bind_errors(m);
  bind_report(m);
  bind_sort(m);
  bind_table(m);
  bind_groupby(m);
  bind_csv(m);
  bind_wordcount(m);
  bind_topk(m);
  bind_info(m);
  bind_device(m);
  bind_table_sort(m);
  bind_arrow(m);
  m.attr("cuda_built") = static_cast<bool>(TANDEM_HAS_CUDA);
}
