// DuckDB's C API from the libduckdb.so that the npm package ships (@duckdb/node-bindings-linux-x64),
// opened at run time, so that nothing in the project links DuckDB: the anchors of
// duckdb_groupby_csv and bench_sort_file. The types are duckdb.h's (its result struct's layout is
// frozen upstream). Errors are std::runtime_error naming the statement.
#pragma once
#include <dlfcn.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tandem::bench {

class DuckDb {
 public:
  // `database`: a file, or empty for an in-memory database.
  DuckDb(const std::string& lib, const std::string& database = {}) {
    lib_ = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib_ == nullptr) throw std::runtime_error("cannot open " + lib + ": " + dlerror());
    bind(api_.open, "duckdb_open");
    bind(api_.connect, "duckdb_connect");
    bind(api_.query, "duckdb_query");
    bind(api_.result_error, "duckdb_result_error");
    bind(api_.row_count, "duckdb_row_count");
    bind(api_.value_varchar, "duckdb_value_varchar");
    bind(api_.free, "duckdb_free");
    bind(api_.destroy_result, "duckdb_destroy_result");
    bind(api_.disconnect, "duckdb_disconnect");
    bind(api_.close, "duckdb_close");
    if (api_.open(database.empty() ? nullptr : database.c_str(), &db_) != 0)
      throw std::runtime_error("duckdb_open(" + database + ") failed");
    if (api_.connect(db_, &con_) != 0) throw std::runtime_error("duckdb_connect failed");
  }
  DuckDb(const DuckDb&) = delete;
  DuckDb& operator=(const DuckDb&) = delete;
  ~DuckDb() {
    api_.disconnect(&con_);
    api_.close(&db_);
  }

  // Runs `sql`: its rows, the first `columns` cells of each as text (nullopt when the statement
  // failed and `may_fail`).
  std::optional<std::vector<std::vector<std::string>>> try_rows(const std::string& sql, std::size_t columns,
                                                                bool may_fail = false) {
    Result r{};
    if (api_.query(con_, sql.c_str(), &r) != 0) {
      const std::string why = api_.result_error(&r) ? api_.result_error(&r) : "unknown error";
      api_.destroy_result(&r);
      if (may_fail) return std::nullopt;
      throw std::runtime_error("DuckDB: " + why + " in: " + sql);
    }
    std::vector<std::vector<std::string>> rows(columns ? api_.row_count(&r) : 0);
    for (idx_t i = 0; i < rows.size(); ++i)
      for (idx_t c = 0; c < columns; ++c) {
        char* v = api_.value_varchar(&r, c, i);
        rows[i].emplace_back(v ? v : "");
        api_.free(v);
      }
    api_.destroy_result(&r);
    return rows;
  }
  void run(const std::string& sql) { (void)try_rows(sql, 0); }
  std::vector<std::vector<std::string>> rows(const std::string& sql, std::size_t columns) {
    return *try_rows(sql, columns);
  }
  std::string first_cell(const std::string& sql) {
    const auto r = rows(sql, 1);
    return r.empty() ? std::string() : r[0][0];
  }

 private:
  using idx_t = std::uint64_t;
  struct Result {
    idx_t deprecated_column_count, deprecated_row_count, deprecated_rows_changed;
    void* deprecated_columns;
    char* deprecated_error_message;
    void* internal_data;
  };
  struct Api {
    int (*open)(const char*, void**);
    int (*connect)(void*, void**);
    int (*query)(void*, const char*, Result*);
    const char* (*result_error)(Result*);
    idx_t (*row_count)(Result*);
    char* (*value_varchar)(Result*, idx_t, idx_t);
    void (*free)(void*);
    void (*destroy_result)(Result*);
    void (*disconnect)(void**);
    void (*close)(void**);
  };
  template <class F>
  void bind(F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(lib_, name));
    if (f == nullptr) throw std::runtime_error(std::string("libduckdb: no symbol ") + name);
  }
  void* lib_{nullptr};
  Api api_{};
  void* db_{nullptr};
  void* con_{nullptr};
};

}  // namespace tandem::bench
