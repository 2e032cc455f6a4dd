#include <hpf/data/synthetic.hpp>
#include <hpf/train/trainer.hpp>
#include <hpf/trace/chrome_trace.hpp>
#include <hpf/trace/options.hpp>
#include <hpf/trace/recorder.hpp>
#include <hpf/trace/span.hpp>
#include <hpf/zoo/models.hpp>

#include <support/trace_file.hpp>

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace trace = hpf::trace;

TEST_CASE("spans record nothing while no recorder is active") {
  trace::Recorder recorder(8);
  trace::activate(nullptr, false);
  { trace::Span s(trace::Track::compute, "forward"); }
  trace::Pending::open(trace::Track::send, "send").close();
  CHECK(recorder.events().empty());
  CHECK_FALSE(trace::layer_spans());
}

TEST_CASE("a recorder keeps spans in order, closes them, and counts what does not fit") {
  trace::Recorder recorder(3);
  trace::activate(&recorder, true);
  recorder.set_step(7);
  {
    trace::Span outer(trace::Track::compute, "step");
    trace::Blocking b(trace::Track::receive, "receive activation", {.stage = 1, .micro_batch = 2, .bytes = 64});
    trace::Span dropped(trace::Track::compute, "optimizer");
  }
  trace::activate(nullptr, false);
  const auto& e = recorder.events();
  REQUIRE(e.size() == 3);
  CHECK(recorder.dropped() == 1);
  CHECK(e[0].name == "step");
  CHECK(e[1].track == trace::Track::receive);
  CHECK(e[2].track == trace::Track::wait);
  CHECK(e[1].tags.micro_batch == 2);
  for (const auto& x : e) {
    CHECK(x.step == 7);
    CHECK(x.end >= x.begin);
  }
  CHECK(e[0].end >= e[1].end);  // the scope nests
}

TEST_CASE("a pending span ends when it is closed, once") {
  trace::Recorder recorder(4);
  trace::activate(&recorder, false);
  auto p = trace::Pending::open(trace::Track::send, "send gradient");
  trace::activate(nullptr, false);  // the window may close while a send is in flight
  CHECK(recorder.events()[0].end < 0);
  trace::Pending moved = std::move(p);
  moved.close();
  const auto end = recorder.events()[0].end;
  CHECK(end >= recorder.events()[0].begin);
  moved.close();
  p.close();
  CHECK(recorder.events()[0].end == end);
}

TEST_CASE("clock alignment interpolates the offset between its two measurements") {
  const trace::ClockAlignment clock{.origin = 1000, .local_start = 0, .offset_start = 100, .local_end = 1000, .offset_end = 300};
  CHECK(clock.to_trace(0) == -900);
  CHECK(clock.to_trace(500) == 500 + 200 - 1000);
  CHECK(clock.to_trace(1000) == 1000 + 300 - 1000);
}

TEST_CASE("trace options come from the environment, and a malformed window is an error naming it") {
  setenv("HPF_TRACE", "out.json", 1);
  setenv("HPF_TRACE_STEPS", "10-20", 1);
  setenv("HPF_TRACE_LAYERS", "1", 1);
  auto o = trace::TraceOptions::from_environment();
  CHECK(o.path == "out.json");
  CHECK(o.first_step == 10);
  CHECK(o.last_step == 20);
  CHECK(o.layers);
  setenv("HPF_TRACE_STEPS", "7", 1);
  o = trace::TraceOptions::from_environment();
  CHECK(o.first_step == 7);
  CHECK(o.last_step == 7);
  for (const char* bad : {"x", "3-", "-4", "2-y", "1.5"}) {
    setenv("HPF_TRACE_STEPS", bad, 1);
    CHECK_THROWS_WITH_AS(trace::TraceOptions::from_environment(), doctest::Contains((std::string("HPF_TRACE_STEPS='") + bad).c_str()), std::invalid_argument);
  }
  setenv("HPF_TRACE_STEPS", "5-2", 1);
  CHECK_THROWS_WITH_AS(trace::TraceOptions::from_environment().check(), doctest::Contains("ends (step 2) before it starts (step 5)"), std::invalid_argument);
  unsetenv("HPF_TRACE");
  unsetenv("HPF_TRACE_STEPS");
  unsetenv("HPF_TRACE_LAYERS");
  CHECK_FALSE(trace::TraceOptions::from_environment().enabled());
}

TEST_CASE("one process's trace: a Chrome trace file with its steps, passes and layers") {
  using Model = hpf::zoo::Mlp;
  using In = Model::input_shape;
  const auto data = hpf::data::synthetic_dataset(64, In::channels, In::height, In::width, 10, 1);
  hpf::TrainOptions o;
  o.batch = 16;
  o.micro_batches = 2;
  o.data_shards = 2;
  o.reduction = hpf::GradientReduction::ordered;
  o.progress = hpf::ProgressMode::none;
  o.evaluate = false;
  const std::string path = "hpf_test_recorder_trainer.json";
  std::remove(path.c_str());
  o.trace = {.path = path, .first_step = 1, .last_step = 2, .layers = true};
  hpf::Trainer<Model> trainer(o, data);
  trainer.fit();
  CHECK_FALSE(trace::layer_spans());  // the window closed with the run
  const auto t = hpf_test::read_trace(path);
  REQUIRE(t.processes.size() == 1);
  CHECK(t.facts.count("stages") == 1);
  for (long long step : {1, 2}) {
    CHECK(t.select(0, "compute", "step", step).size() == 1);
    CHECK(t.select(0, "compute", "forward", step).size() == 4);  // 2 shards x 2 micro-batches
    CHECK(t.select(0, "compute", "backward", step).size() == 4);
    CHECK(t.select(0, "compute", "reduce shards", step).size() == 1);
    CHECK(t.select(0, "compute", "Dense", step).size() >= 8);
  }
  CHECK(t.select(0, "compute", "step", 0).empty());
  CHECK(t.select(0, "compute", "step", 3).empty());
}

TEST_CASE("short type names label layer kinds") {
  CHECK(hpf::short_type_name<hpf::Dense<10>>() == "Dense");
  CHECK(hpf::short_type_name<int>() == "int");
}
