// SPDX-License-Identifier: MIT
/*
 * c10d: the torch.distributed backend "world", a c10d ProcessGroup over one
 * of libworld's collective groups. Every operation starts libworld's own
 * started form and returns a Work that waits for it; the only bytes moved
 * here are the copies into and out of tensors libworld cannot take as
 * they are (not contiguous, or a list where libworld wants one buffer).
 * world/c10d.py registers it with torch and finds the world it runs in.
 */
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/utils/pybind.h>

#include <world.h>

#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

namespace {

class WorldWork;

// A libworld group, shared by its process group and the Works still
// running on it: libworld frees a request through its group, so the group
// goes last. Works not yet waited for are held here (live) until they end,
// so that a stop can end them; futures are completed by a thread of the
// group, started when a Work's future is first asked for (DDP's hooks).
struct Comm {
	std::mutex mu;
	struct world_coll *c = nullptr;
	std::vector<c10::intrusive_ptr<WorldWork>> live;

	std::mutex qmu;
	std::condition_variable qcv;
	std::deque<c10::intrusive_ptr<WorldWork>> queue;
	std::thread completer;
	bool stopping = false;

	void complete_later(c10::intrusive_ptr<WorldWork> w);
	void finish_all();
	~Comm();
};

// Every Comm of the process: world_stop() frees the groups of its world,
// so Python's World.stop() ends their use here first. The one global of
// this module, for that one reason.
std::mutex comms_mu;
std::set<std::shared_ptr<Comm>> comms;

// How the last call of this thread failed with @rc: libworld's message,
// else the code's text, and the dead rank that libworld names.
std::string
why(int rc)
{
	const struct world_failure *f = world_last_failure();

	if (f->code == rc && f->message[0] != '\0') {
		return f->message;
	}
	if (f->code == rc && rc == WORLD_EPEERDEAD && f->rank >= 0) {
		return std::string(world_strerror(rc)) + ": world rank " + std::to_string(f->rank);
	}
	return world_strerror(rc);
}

enum world_dtype
dtype_of(const at::Tensor &t)
{
	switch (t.scalar_type()) {
	case at::kChar: return WORLD_INT8;
	case at::kShort: return WORLD_INT16;
	case at::kInt: return WORLD_INT32;
	case at::kLong: return WORLD_INT64;
	case at::kByte: return WORLD_UINT8;
	case at::kBool: return WORLD_UINT8;
	case at::kHalf: return WORLD_FLOAT16;
	case at::kBFloat16: return WORLD_BFLOAT16;
	case at::kFloat: return WORLD_FLOAT32;
	case at::kDouble: return WORLD_FLOAT64;
	default:
		TORCH_CHECK(false, "world: tensors of ", t.scalar_type(),
			    " are not supported (integers, bool, float16, bfloat16, float32 and float64 are)");
	}
}

// A bool's SUM is its OR and its PRODUCT its AND, as torch's other
// backends have them.
enum world_op
op_of(const c10d::ReduceOp &op, const at::Tensor &t)
{
	bool logical = t.scalar_type() == at::kBool;

	switch (op.op_) {
	case c10d::ReduceOp::SUM: return logical ? WORLD_BOR : WORLD_SUM;
	case c10d::ReduceOp::PRODUCT: return logical ? WORLD_BAND : WORLD_PROD;
	case c10d::ReduceOp::MIN: return WORLD_MIN;
	case c10d::ReduceOp::MAX: return WORLD_MAX;
	case c10d::ReduceOp::BAND: return WORLD_BAND;
	case c10d::ReduceOp::BOR: return WORLD_BOR;
	case c10d::ReduceOp::BXOR: return WORLD_BXOR;
	case c10d::ReduceOp::AVG:
		TORCH_CHECK(!logical && at::isFloatingType(t.scalar_type()),
			    "world: ReduceOp.AVG takes floating-point tensors only");
		return WORLD_AVG;
	default:
		TORCH_CHECK(false, "world: ReduceOp ", int(op.op_),
			    " is not supported (PREMUL_SUM is NCCL's own)");
	}
}

void
check_tensor(const at::Tensor &t)
{
	TORCH_CHECK(t.device().is_cpu(),
		    "world: only CPU tensors are supported (GPU collectives are not: use nccl, or move the tensor to the CPU)");
	TORCH_CHECK(t.layout() == at::kStrided, "world: sparse tensors are not supported");
	dtype_of(t);
}

const at::Tensor &
check_one(const std::vector<at::Tensor> &ts)
{
	TORCH_CHECK(ts.size() == 1, "world: one tensor per call (one device per process), not ",
		    ts.size());
	check_tensor(ts[0]);
	return ts[0];
}

// A list of @n tensors of the dtype and number of elements of @like.
void
check_list(const std::vector<at::Tensor> &ts, const at::Tensor &like, size_t n)
{
	TORCH_CHECK(ts.size() == n, "world: a list of ", n, " tensors is needed, not ", ts.size());
	for (const auto &t : ts) {
		check_tensor(t);
		TORCH_CHECK(t.scalar_type() == like.scalar_type() && t.numel() == like.numel(),
			    "world: every tensor of the list must have the input's dtype and size");
	}
}

size_t
count(const at::Tensor &t)
{
	return size_t(t.numel());
}

class WorldWork : public c10d::Work {
public:
	WorldWork(std::shared_ptr<Comm> comm, int rank, c10d::OpType type, int timeout_ms,
		  std::vector<at::Tensor> outputs)
		: Work(rank, type), comm_(std::move(comm)), timeout_ms_(timeout_ms),
		  outputs_(std::move(outputs))
	{
	}

	// Start one libworld operation of this work: @f(group, &request).
	template <typename F>
	void
	start(const char *what, F &&f)
	{
		struct world_coll_req *r = nullptr;
		std::string error;
		int rc;

		what_ = what;
		{
			std::lock_guard<std::mutex> g(comm_->mu);
			if (comm_->c == nullptr) {
				rc = WORLD_EREGISTRY;
				error = "the world is stopped (world.World.stop())";
			} else if ((rc = f(comm_->c, &r)) == 0) {
				if (reqs_.empty()) {
					comm_->live.push_back(
						c10::intrusive_ptr<WorldWork>::reclaim_copy(this));
				}
				reqs_.push_back(r);
			} else {
				error = why(rc);
			}
		}
		if (rc < 0) {
			end(-1);
			TORCH_CHECK(false, "world: ", what, ": ", error);
		}
	}

	// What to copy where once the operations are done.
	void
	then_copy(at::Tensor to, at::Tensor from)
	{
		copies_.emplace_back(std::move(to), std::move(from));
	}

	// A tensor libworld uses until the work is done.
	void
	keep(at::Tensor t)
	{
		kept_.push_back(std::move(t));
	}

	bool
	isCompleted() override
	{
		{
			std::unique_lock<std::mutex> w(waiting_, std::try_to_lock);

			if (!w.owns_lock()) {
				return false;
			}
			for (auto *r : reqs_) {
				if (world_coll_test(r) == 0) {
					return done();
				}
			}
		}
		end(timeout_ms_);
		return true;
	}

	bool
	wait(std::chrono::milliseconds timeout) override
	{
		end(timeout.count() > 0 ? int(timeout.count()) : timeout_ms_);
		std::lock_guard<std::mutex> g(mutex_);
		if (exception_) {
			std::rethrow_exception(exception_);
		}
		return true;
	}

	int
	sourceRank() const override
	{
		std::lock_guard<std::mutex> g(mutex_);
		return source_;
	}

	std::vector<at::Tensor>
	result() override
	{
		return outputs_;
	}

	c10::intrusive_ptr<c10::ivalue::Future>
	getFuture() override
	{
		bool later = false;

		{
			std::lock_guard<std::mutex> g(mutex_);
			if (!future_) {
				future_ = c10::make_intrusive<c10::ivalue::Future>(
					c10::ListType::create(c10::TensorType::get()));
				if (completed_) {
					complete_future();
				} else {
					later = true;
				}
			}
		}
		if (later) {
			comm_->complete_later(c10::intrusive_ptr<WorldWork>::reclaim_copy(this));
		}
		return future_;
	}

	// Wait (at most @ms; -1: the work's timeout, the process group's) for
	// every request, free them, make the copies and complete, once. A
	// timeout completes the work with its error (a collective has then
	// timed out and poisoned the group, as it runs by the same deadline).
	// The caller holds a reference: live drops one here.
	void
	end(int ms)
	{
		std::lock_guard<std::mutex> w(waiting_);
		int rc = 0, source = -1, wait_ms = ms < 0 ? timeout_ms_ : ms;

		if (done()) {
			return;
		}
		for (auto *r : reqs_) {
			int src = -1;
			int one = world_coll_wait(r, wait_ms, &src);

			if (one < 0 && rc == 0) {
				rc = one;
				error_ = std::string("world: ") + what_ + ": " + why(one);
				if (one == -ETIMEDOUT) {
					error_ += " (the process group's timeout, " +
						  std::to_string(wait_ms) + " ms)";
					break;
				}
			}
			source = src >= 0 ? src : source;
		}
		release();
		if (rc == 0) {
			for (auto &p : copies_) {
				p.first.copy_(p.second);
			}
		}
		copies_.clear();
		kept_.clear();
		finish_with(rc, source);
	}

private:
	bool
	done()
	{
		std::lock_guard<std::mutex> g(mutex_);
		return completed_;
	}

	// Free the requests (one still running is waited for by its own
	// deadline) and leave the group's live list.
	void
	release()
	{
		std::lock_guard<std::mutex> g(comm_->mu);
		for (auto *r : reqs_) {
			world_coll_req_free(r);
		}
		reqs_.clear();
		for (auto it = comm_->live.begin(); it != comm_->live.end(); ++it) {
			if (it->get() == this) {
				comm_->live.erase(it);
				break;
			}
		}
	}

	void
	finish_with(int rc, int source)
	{
		std::lock_guard<std::mutex> g(mutex_);
		source_ = source;
		if (rc < 0) {
			exception_ = std::make_exception_ptr(std::runtime_error(error_));
		}
		completed_ = true;
		cv_.notify_all();
		if (future_) {
			complete_future();
		}
	}

	// With mutex_ held.
	void
	complete_future()
	{
		if (exception_) {
			future_->setError(exception_);
		} else {
			future_->markCompleted(c10::IValue(outputs_));
		}
	}

	std::shared_ptr<Comm> comm_;
	std::vector<struct world_coll_req *> reqs_;
	std::vector<std::pair<at::Tensor, at::Tensor>> copies_;
	std::vector<at::Tensor> kept_;
	std::mutex waiting_;
	int timeout_ms_;
	int source_ = -1;
	const char *what_ = "";
	std::string error_;
	std::vector<at::Tensor> outputs_;
	c10::intrusive_ptr<c10::ivalue::Future> future_;
};

void
Comm::complete_later(c10::intrusive_ptr<WorldWork> w)
{
	std::lock_guard<std::mutex> g(qmu);
	if (!completer.joinable()) {
		completer = std::thread([this] {
			std::unique_lock<std::mutex> q(qmu);
			for (;;) {
				qcv.wait(q, [this] { return stopping || !queue.empty(); });
				if (queue.empty()) {
					break;
				}
				auto next = std::move(queue.front());
				queue.pop_front();
				q.unlock();
				next->end(-1);
				next.reset();
				q.lock();
			}
		});
	}
	queue.push_back(std::move(w));
	qcv.notify_one();
}

// End every live work (each waits for its requests), so that the group
// can go.
void
Comm::finish_all()
{
	std::vector<c10::intrusive_ptr<WorldWork>> works;

	{
		std::lock_guard<std::mutex> g(mu);
		works = live;
	}
	for (auto &w : works) {
		w->end(-1);
	}
}

Comm::~Comm()
{
	{
		std::lock_guard<std::mutex> g(qmu);
		stopping = true;
		qcv.notify_one();
	}
	// The completer may drop the last reference to this group itself.
	if (completer.joinable() && completer.get_id() == std::this_thread::get_id()) {
		completer.detach();
	} else if (completer.joinable()) {
		completer.join();
	}
	world_coll_destroy(c);
}

// The tag of alltoall's uneven exchanges; users' sends take the tags below.
constexpr int TAG_ALLTOALL = WORLD_TAG_MAX;

// @t itself when libworld can take it (contiguous), else a contiguous copy,
// copied back into @t at the end when @back.
at::Tensor
as_buffer(WorldWork &w, const at::Tensor &t, bool back)
{
	if (t.is_contiguous()) {
		w.keep(t);
		return t;
	}
	at::Tensor b = t.contiguous();
	w.keep(b);
	if (back) {
		w.then_copy(t, b);
	}
	return b;
}

// The tensors of @ts laid end to end in one new tensor.
at::Tensor
joined(WorldWork &w, const std::vector<at::Tensor> &ts)
{
	std::vector<at::Tensor> flat;

	for (const auto &t : ts) {
		flat.push_back(t.reshape(-1));
	}
	at::Tensor b = at::cat(flat);
	w.keep(b);
	return b;
}

// Copy block i of @from (each the size of @ts[i]) into @ts[i] at the end.
void
split_into(WorldWork &w, const std::vector<at::Tensor> &ts, const at::Tensor &from)
{
	int64_t off = 0;

	for (const auto &t : ts) {
		w.then_copy(t, from.narrow(0, off, t.numel()).view_as(t));
		off += t.numel();
	}
}

class ProcessGroupWorld : public c10d::ProcessGroup {
public:
	ProcessGroupWorld(int rank, int size, std::shared_ptr<Comm> comm, int timeout_ms)
		: ProcessGroup(rank, size), comm_(std::move(comm)), timeout_ms_(timeout_ms)
	{
	}

	~ProcessGroupWorld() override
	{
		comm_->finish_all();
		std::lock_guard<std::mutex> g(comms_mu);
		comms.erase(comm_);
	}

	const std::string
	getBackendName() const override
	{
		return "world";
	}

	c10::intrusive_ptr<c10d::Work>
	broadcast(std::vector<at::Tensor> &ts, const c10d::BroadcastOptions &o) override
	{
		const at::Tensor &t = check_one(ts);
		int root = root_of(o.rootRank);
		auto w = work(c10d::OpType::BROADCAST, ts, o.timeout);
		at::Tensor b = as_buffer(*w, t, true);

		w->start("broadcast", [&](struct world_coll *c, struct world_coll_req **r) {
			return world_coll_ibroadcast(c, b.data_ptr(), count(b), dtype_of(b), root, r);
		});
		return w;
	}

	c10::intrusive_ptr<c10d::Work>
	allreduce(std::vector<at::Tensor> &ts, const c10d::AllreduceOptions &o) override
	{
		const at::Tensor &t = check_one(ts);
		enum world_op op = op_of(o.reduceOp, t);
		auto w = work(c10d::OpType::ALLREDUCE, ts, o.timeout);
		at::Tensor b = as_buffer(*w, t, true);

		w->start("all_reduce", [&](struct world_coll *c, struct world_coll_req **r) {
			return world_coll_iall_reduce(c, b.data_ptr(), count(b), dtype_of(b), op, r);
		});
		return w;
	}

	// One all_reduce of the tensors laid end to end.
	c10::intrusive_ptr<c10d::Work>
	allreduce_coalesced(std::vector<at::Tensor> &ts,
			    const c10d::AllreduceCoalescedOptions &o) override
	{
		TORCH_CHECK(!ts.empty(), "world: allreduce_coalesced of no tensors");
		for (const auto &t : ts) {
			check_tensor(t);
			TORCH_CHECK(t.scalar_type() == ts[0].scalar_type(),
				    "world: allreduce_coalesced takes tensors of one dtype");
		}
		enum world_op op = op_of(o.reduceOp, ts[0]);
		auto w = work(c10d::OpType::ALLREDUCE_COALESCED, ts, o.timeout);
		at::Tensor b = joined(*w, ts);

		split_into(*w, ts, b);
		w->start("all_reduce", [&](struct world_coll *c, struct world_coll_req **r) {
			return world_coll_iall_reduce(c, b.data_ptr(), count(b), dtype_of(b), op, r);
		});
		return w;
	}

	c10::intrusive_ptr<c10d::Work>
	reduce(std::vector<at::Tensor> &ts, const c10d::ReduceOptions &o) override
	{
		const at::Tensor &t = check_one(ts);
		int root = root_of(o.rootRank);
		enum world_op op = op_of(o.reduceOp, t);
		auto w = work(c10d::OpType::REDUCE, ts, o.timeout);
		at::Tensor b = as_buffer(*w, t, true);

		w->start("reduce", [&](struct world_coll *c, struct world_coll_req **r) {
			return world_coll_ireduce(c, b.data_ptr(), count(b), dtype_of(b), op, root, r);
		});
		return w;
	}

	c10::intrusive_ptr<c10d::Work>
	allgather(std::vector<std::vector<at::Tensor>> &outs, std::vector<at::Tensor> &ins,
		  const c10d::AllgatherOptions &o) override
	{
		const at::Tensor &in = check_one(ins);

		TORCH_CHECK(outs.size() == 1, "world: one output list per call");
		check_list(outs[0], in, size_t(getSize()));
		auto w = work(c10d::OpType::ALLGATHER, outs[0], o.timeout);
		gather_into(*w, outs[0], in);
		return w;
	}

	c10::intrusive_ptr<c10d::Work>
	_allgather_base(at::Tensor &out, at::Tensor &in, const c10d::AllgatherOptions &o) override
	{
		check_tensor(in);
		check_tensor(out);
		TORCH_CHECK(out.scalar_type() == in.scalar_type() &&
				    out.numel() == in.numel() * getSize(),
			    "world: the output must hold size x the input, of its dtype");
		auto w = work(c10d::OpType::_ALLGATHER_BASE, { out }, o.timeout);
		at::Tensor ib = as_buffer(*w, in, false), ob = as_buffer(*w, out, true);

		w->start("all_gather", [&](struct world_coll *c, struct world_coll_req **r) {
			return world_coll_iall_gather(c, ib.data_ptr(), ob.data_ptr(), count(ib),
						      dtype_of(ib), r);
		});
		return w;
	}

	// One all_gather per input, in one work.
	c10::intrusive_ptr<c10d::Work>
	allgather_coalesced(std::vector<std::vector<at::Tensor>> &outs, std::vector<at::Tensor> &ins,
			    const c10d::AllgatherOptions &o) override
	{
		std::vector<at::Tensor> all;

		TORCH_CHECK(outs.size() == ins.size(),
			    "world: allgather_coalesced needs one output list per input");
		for (size_t i = 0; i < ins.size(); i++) {
			check_tensor(ins[i]);
			check_list(outs[i], ins[i], size_t(getSize()));
			all.insert(all.end(), outs[i].begin(), outs[i].end());
		}
		auto w = work(c10d::OpType::ALLGATHER_COALESCED, all, o.timeout);
		for (size_t i = 0; i < ins.size(); i++) {
			gather_into(*w, outs[i], ins[i]);
		}
		return w;
	}

	c10::intrusive_ptr<c10d::Work>
	gather(std::vector<std::vector<at::Tensor>> &outs, std::vector<at::Tensor> &ins,
	       const c10d::GatherOptions &o) override
	{
		const at::Tensor &in = check_one(ins);
		int root = root_of(o.rootRank);
		bool here = root == getRank();

		TORCH_CHECK(here ? outs.size() == 1 : outs.empty() || outs[0].empty(),
			    "world: gather takes an output list on its root only");
		if (here) {
			check_list(outs[0], in, size_t(getSize()));
		}
		auto w = work(c10d::OpType::GATHER, here ? outs[0] : std::vector<at::Tensor>(),
			      o.timeout);
		at::Tensor ib = as_buffer(*w, in, false), flat;
		if (here) {
			flat = at::empty({ in.numel() * getSize() }, in.options());
			w->keep(flat);
			split_into(*w, outs[0], flat);
		}
		w->start("gather", [&](struct world_coll *c, struct world_coll_req **r) {
			return world_coll_igather(c, ib.data_ptr(), here ? flat.data_ptr() : nullptr,
						  count(ib), dtype_of(ib), root, r);
		});
		return w;
	}

	c10::intrusive_ptr<c10d::Work>
	scatter(std::vector<at::Tensor> &outs, std::vector<std::vector<at::Tensor>> &ins,
		const c10d::ScatterOptions &o) override
	{
		const at::Tensor &out = check_one(outs);
		int root = root_of(o.rootRank);
		bool here = root == getRank();

		TORCH_CHECK(here ? ins.size() == 1 : ins.empty() || ins[0].empty(),
			    "world: scatter takes an input list on its root only");
		if (here) {
			check_list(ins[0], out, size_t(getSize()));
		}
		auto w = work(c10d::OpType::SCATTER, outs, o.timeout);
		at::Tensor ob = as_buffer(*w, out, true);
		at::Tensor flat = here ? joined(*w, ins[0]) : at::Tensor();
		w->start("scatter", [&](struct world_coll *c, struct world_coll_req **r) {
			return world_coll_iscatter(c, here ? flat.data_ptr() : nullptr, ob.data_ptr(),
						   count(ob), dtype_of(ob), root, r);
		});
		return w;
	}

	c10::intrusive_ptr<c10d::Work>
	reduce_scatter(std::vector<at::Tensor> &outs, std::vector<std::vector<at::Tensor>> &ins,
		       const c10d::ReduceScatterOptions &o) override
	{
		const at::Tensor &out = check_one(outs);

		TORCH_CHECK(ins.size() == 1, "world: one input list per call");
		check_list(ins[0], out, size_t(getSize()));
		enum world_op op = op_of(o.reduceOp, out);
		auto w = work(c10d::OpType::REDUCE_SCATTER, outs, o.timeout);
		at::Tensor ob = as_buffer(*w, out, true), flat = joined(*w, ins[0]);
		w->start("reduce_scatter", [&](struct world_coll *c, struct world_coll_req **r) {
			return world_coll_ireduce_scatter(c, flat.data_ptr(), ob.data_ptr(), count(ob),
							  dtype_of(ob), op, r);
		});
		return w;
	}

	c10::intrusive_ptr<c10d::Work>
	_reduce_scatter_base(at::Tensor &out, at::Tensor &in,
			     const c10d::ReduceScatterOptions &o) override
	{
		check_tensor(in);
		check_tensor(out);
		TORCH_CHECK(out.scalar_type() == in.scalar_type() &&
				    in.numel() == out.numel() * getSize(),
			    "world: the input must hold size x the output, of its dtype");
		enum world_op op = op_of(o.reduceOp, out);
		auto w = work(c10d::OpType::_REDUCE_SCATTER_BASE, { out }, o.timeout);
		at::Tensor ib = as_buffer(*w, in, false), ob = as_buffer(*w, out, true);
		w->start("reduce_scatter", [&](struct world_coll *c, struct world_coll_req **r) {
			return world_coll_ireduce_scatter(c, ib.data_ptr(), ob.data_ptr(), count(ob),
							  dtype_of(ob), op, r);
		});
		return w;
	}

	c10::intrusive_ptr<c10d::Work>
	alltoall_base(at::Tensor &out, at::Tensor &in, std::vector<int64_t> &out_splits,
		      std::vector<int64_t> &in_splits, const c10d::AllToAllOptions &o) override
	{
		check_tensor(in);
		check_tensor(out);
		TORCH_CHECK(out.scalar_type() == in.scalar_type(),
			    "world: alltoall's input and output must have one dtype");
		auto w = work(c10d::OpType::ALLTOALL_BASE, { out }, o.timeout);
		at::Tensor ib = as_buffer(*w, in, false), ob = as_buffer(*w, out, true);
		if (out_splits.empty() && in_splits.empty()) {
			TORCH_CHECK(in.numel() % getSize() == 0 && out.numel() == in.numel(),
				    "world: alltoall's tensors must split evenly over the group");
			w->start("all_to_all", [&](struct world_coll *c, struct world_coll_req **r) {
				return world_coll_iall_to_all(c, ib.data_ptr(), ob.data_ptr(),
							      count(ib) / size_t(getSize()),
							      dtype_of(ib), r);
			});
			return w;
		}
		std::vector<at::Tensor> ins = split(ib, in_splits), outs = split(ob, out_splits);
		exchange(*w, outs, ins);
		return w;
	}

	c10::intrusive_ptr<c10d::Work>
	alltoall(std::vector<at::Tensor> &outs, std::vector<at::Tensor> &ins,
		 const c10d::AllToAllOptions &o) override
	{
		size_t n = size_t(getSize());

		TORCH_CHECK(outs.size() == n && ins.size() == n,
			    "world: alltoall takes a list of ", n, " inputs and of ", n, " outputs");
		for (size_t i = 0; i < n; i++) {
			check_tensor(ins[i]);
			check_tensor(outs[i]);
			TORCH_CHECK(ins[i].scalar_type() == ins[0].scalar_type() &&
					    outs[i].scalar_type() == ins[0].scalar_type(),
				    "world: alltoall's tensors must have one dtype");
		}
		auto w = work(c10d::OpType::ALLTOALL, outs, o.timeout);
		std::vector<at::Tensor> ib, ob;
		for (size_t i = 0; i < n; i++) {
			ib.push_back(as_buffer(*w, ins[i], false));
			ob.push_back(as_buffer(*w, outs[i], true));
		}
		exchange(*w, ob, ib);
		return w;
	}

	c10::intrusive_ptr<c10d::Work>
	send(std::vector<at::Tensor> &ts, int dst, int tag) override
	{
		const at::Tensor &t = check_one(ts);
		int to = root_of(dst);

		check_tag(tag);
		auto w = work(c10d::OpType::SEND, ts, c10d::kUnsetTimeout);
		at::Tensor b = as_buffer(*w, t, false);
		w->start("send", [&](struct world_coll *c, struct world_coll_req **r) {
			return world_coll_isend(c, b.data_ptr(), count(b), dtype_of(b), to, tag, r);
		});
		return w;
	}

	c10::intrusive_ptr<c10d::Work>
	recv(std::vector<at::Tensor> &ts, int src, int tag) override
	{
		return receive(ts, root_of(src), tag);
	}

	c10::intrusive_ptr<c10d::Work>
	recvAnysource(std::vector<at::Tensor> &ts, int tag) override
	{
		return receive(ts, WORLD_ANY_SOURCE, tag);
	}

	c10::intrusive_ptr<c10d::Work>
	barrier(const c10d::BarrierOptions &o) override
	{
		auto w = work(c10d::OpType::BARRIER, {}, o.timeout);

		w->start("barrier", [&](struct world_coll *c, struct world_coll_req **r) {
			return world_coll_ibarrier(c, r);
		});
		return w;
	}

private:
	c10::intrusive_ptr<WorldWork>
	work(c10d::OpType type, std::vector<at::Tensor> outputs, std::chrono::milliseconds t)
	{
		int ms = t.count() >= 0 ? int(std::min<int64_t>(t.count(), INT32_MAX)) : timeout_ms_;

		return c10::make_intrusive<WorldWork>(comm_, getRank(), type, ms, std::move(outputs));
	}

	int
	root_of(int64_t rank) const
	{
		TORCH_CHECK(rank >= 0 && rank < getSize(), "world: rank ", rank,
			    " is not in the group of ", getSize());
		return int(rank);
	}

	static void
	check_tag(int tag)
	{
		TORCH_CHECK(tag >= 0 && tag < TAG_ALLTOALL, "world: a tag is 0 to ", TAG_ALLTOALL - 1,
			    ", not ", tag);
	}

	c10::intrusive_ptr<c10d::Work>
	receive(std::vector<at::Tensor> &ts, int from, int tag)
	{
		const at::Tensor &t = check_one(ts);

		check_tag(tag);
		auto w = work(from < 0 ? c10d::OpType::RECVANYSOURCE : c10d::OpType::RECV, ts,
			      c10d::kUnsetTimeout);
		at::Tensor b = as_buffer(*w, t, true);
		w->start("recv", [&](struct world_coll *c, struct world_coll_req **r) {
			return world_coll_irecv(c, b.data_ptr(), count(b), dtype_of(b), from, tag, r);
		});
		return w;
	}

	// all_gather of @in into the list @outs, through one flat tensor.
	void
	gather_into(WorldWork &w, const std::vector<at::Tensor> &outs, const at::Tensor &in)
	{
		at::Tensor ib = as_buffer(w, in, false);
		at::Tensor flat = at::empty({ in.numel() * getSize() }, in.options());

		w.keep(flat);
		split_into(w, outs, flat);
		w.start("all_gather", [&](struct world_coll *c, struct world_coll_req **r) {
			return world_coll_iall_gather(c, ib.data_ptr(), flat.data_ptr(), count(ib),
						      dtype_of(ib), r);
		});
	}

	// @t's rows cut by @splits (empty: evenly) into one view per member.
	std::vector<at::Tensor>
	split(const at::Tensor &t, const std::vector<int64_t> &splits)
	{
		std::vector<at::Tensor> parts;
		int64_t rows = t.dim() == 0 ? 1 : t.size(0), at = 0;
		at::Tensor flat = t.reshape({ rows, -1 });

		TORCH_CHECK(splits.empty() ? rows % getSize() == 0 :
					     splits.size() == size_t(getSize()),
			    "world: alltoall's split sizes must name every member");
		for (int i = 0; i < getSize(); i++) {
			int64_t n = splits.empty() ? rows / getSize() : splits[size_t(i)];

			TORCH_CHECK(n >= 0 && at + n <= rows, "world: alltoall's split sizes exceed ",
				    rows, " rows");
			parts.push_back(flat.narrow(0, at, n));
			at += n;
		}
		return parts;
	}

	// Block i of @ins to member i, whose block to this member lands in
	// @outs[i]: one send and one receive per other member, on the tag
	// kept for it; this member's own block is copied.
	void
	exchange(WorldWork &w, const std::vector<at::Tensor> &outs, const std::vector<at::Tensor> &ins)
	{
		int me = getRank();

		TORCH_CHECK(outs[size_t(me)].numel() == ins[size_t(me)].numel(),
			    "world: alltoall's block to this member and from it differ in size");
		outs[size_t(me)].copy_(ins[size_t(me)]);
		for (int i = 0; i < getSize(); i++) {
			const at::Tensor &out = outs[size_t(i)], &in = ins[size_t(i)];

			if (i == me) {
				continue;
			}
			w.start("all_to_all", [&](struct world_coll *c, struct world_coll_req **r) {
				return world_coll_irecv(c, out.data_ptr(), count(out), dtype_of(out), i,
							TAG_ALLTOALL, r);
			});
			w.start("all_to_all", [&](struct world_coll *c, struct world_coll_req **r) {
				return world_coll_isend(c, in.data_ptr(), count(in), dtype_of(in), i,
							TAG_ALLTOALL, r);
			});
		}
	}

	std::shared_ptr<Comm> comm_;
	int timeout_ms_;
};

// The group of world ranks @ranks as process group rank @rank of @size.
c10::intrusive_ptr<ProcessGroupWorld>
create(py::capsule handle, std::vector<int> ranks, int rank, int size, int timeout_ms)
{
	auto *w = static_cast<struct world *>(handle.get_pointer());
	auto comm = std::make_shared<Comm>();
	int rc;

	TORCH_CHECK(ranks.size() == size_t(size) && rank >= 0 && rank < size,
		    "world: a group of ", size, " ranks needs as many world ranks");
	{
		py::gil_scoped_release nogil;
		rc = world_coll_create(w, ranks.data(), ranks.size(), timeout_ms, &comm->c);
	}
	TORCH_CHECK(rc == 0, "world: unable to create the group: ", why(rc));
	// The process group's timeout is its collectives' deadline; Works
	// wait that long and so run them on the waiting thread.
	world_coll_set_timeout(comm->c, timeout_ms);
	TORCH_CHECK(world_coll_rank(comm->c) == rank, "world: torch's rank ", rank,
		    " in this group is world's rank ", world_coll_rank(comm->c),
		    ": give torch the ranks worldrun gave (RANK, WORLD_SIZE)");
	{
		std::lock_guard<std::mutex> g(comms_mu);
		comms.insert(comm);
	}
	return c10::make_intrusive<ProcessGroupWorld>(rank, size, comm, timeout_ms);
}

// Before the world stops: end every group's works, and its groups.
void
world_stopping()
{
	std::vector<std::shared_ptr<Comm>> all;

	{
		std::lock_guard<std::mutex> g(comms_mu);
		all.assign(comms.begin(), comms.end());
	}
	for (auto &comm : all) {
		comm->finish_all();
		std::lock_guard<std::mutex> g(comm->mu);
		world_coll_destroy(comm->c);
		comm->c = nullptr;
	}
}

} // namespace

PYBIND11_MODULE(_c10d, m)
{
	m.doc() = "the torch.distributed backend \"world\" (use world.c10d)";
	py::module::import("torch.distributed");
	py::class_<ProcessGroupWorld, c10d::ProcessGroup, c10::intrusive_ptr<ProcessGroupWorld>>(
		m, "ProcessGroupWorld", "a c10d process group over a libworld collective group");
	m.def("create", &create, py::arg("world"), py::arg("ranks"), py::arg("rank"),
	      py::arg("size"), py::arg("timeout_ms"),
	      "create(world, ranks, rank, size, timeout_ms): the group of these world ranks "
	      "(members only)");
	m.attr("TAG_MAX") = TAG_ALLTOALL - 1;
	m.def("world_stopping", &world_stopping, py::call_guard<py::gil_scoped_release>(),
	      "end every group's use before the world stops");
}
