# SPDX-License-Identifier: MIT
"""Machin's servers and buffers, written the way Machin writes them on its
World (machin/parallel/server, machin/frame/buffers/*_d.py): a server
registers services in its group and pairs an accessor under its name;
the accessor (it carries the RpcGroup, which pickles) turns method calls
into registered_sync. Only what the tests S1-S5 use."""
import threading
from collections import OrderedDict


class OrderedServerSimpleImpl:
    """An ordered key/value server with versions, kept version_depth + 1
    deep (machin.parallel.server.ordered_server.OrderedServerSimpleImpl)."""

    def __init__(self, server_name, group, version_depth=1):
        self.server_name, self.group, self.depth = server_name, group, version_depth
        self.storage = {}
        self.lock = threading.Lock()
        group.register(server_name + "/_push_service", self._push_service)
        group.register(server_name + "/_pull_service", self._pull_service)
        group.pair(server_name, OrderedServerSimple(server_name, group))

    def _push_service(self, key, value, version, prev_version):
        with self.lock:
            if key not in self.storage:
                self.storage[key] = OrderedDict()
                self.storage[key][version] = value
                return True
            versions = self.storage[key]
            if next(reversed(versions)) != prev_version:
                return False
            versions[version] = value
            while len(versions) > self.depth + 1:
                versions.popitem(last=False)
            return True

    def _pull_service(self, key, version=None):
        with self.lock:
            versions = self.storage.get(key)
            if versions is None:
                return None
            if version is None:
                version = next(reversed(versions))
            return (versions[version], version) if version in versions else None


class OrderedServerSimple:
    """The accessor (machin.parallel.server.ordered_server.OrderedServerSimple)."""

    def __init__(self, server_name, group):
        self.server_name, self.group = server_name, group

    def push(self, key, value, version, prev_version):
        return self.group.registered_sync(self.server_name + "/_push_service",
                                          args=(key, value, version, prev_version))

    def pull(self, key, version=None):
        return self.group.registered_sync(self.server_name + "/_pull_service",
                                          args=(key, version))


class PushPullModelServerImpl:
    """A model server: the latest state_dict and its version
    (machin.parallel.server.param_server.PushPullModelServerImpl)."""

    def __init__(self, server_name, group):
        self.server_name, self.group = server_name, group
        self.state, self.version = None, -1
        self.lock = threading.Lock()
        group.register(server_name + "/_push", self._push)
        group.register(server_name + "/_pull", self._pull)
        group.pair(server_name, PushPullModelServer(server_name, group))

    def _push(self, state_dict, version):
        with self.lock:
            if version <= self.version:
                return False
            self.state, self.version = state_dict, version
            return True

    def _pull(self):
        with self.lock:
            return self.state, self.version


class PushPullModelServer:
    def __init__(self, server_name, group):
        self.server_name, self.group = server_name, group

    def push(self, model, pp_version):
        return self.group.registered_sync(self.server_name + "/_push",
                                          args=(model.state_dict(), pp_version))

    def pull(self, model):
        state, version = self.group.registered_sync(self.server_name + "/_pull")
        if state is not None:
            model.load_state_dict(state)
        return version


class DistributedBuffer:
    """A buffer of which every member keeps a local part; any process that
    holds the group samples across all parts (machin.frame.buffers
    .buffer_d.DistributedBuffer, its _size_service and _sample_service)."""

    def __init__(self, buffer_name, group, buffer_size):
        self.name, self.group, self.size = buffer_name, group, buffer_size
        self.storage, self.lock = [], threading.Lock()
        group.register(f"{buffer_name}/{group.get_cur_name()}/_size_service",
                       self._size_service)
        group.register(f"{buffer_name}/{group.get_cur_name()}/_sample_service",
                       self._sample_service)
        group.register(f"{buffer_name}/{group.get_cur_name()}/_clear_service", self.clear)

    def store_episode(self, episode):
        with self.lock:
            self.storage.extend(episode)
            del self.storage[:max(0, len(self.storage) - self.size)]

    def clear(self):
        with self.lock:
            self.storage.clear()

    def _size_service(self):
        with self.lock:
            return len(self.storage)

    def _sample_service(self, batch_size):
        with self.lock:
            return list(self.storage[:batch_size])

    def all_size(self):
        return sum(self.group.registered_sync(f"{self.name}/{m}/_size_service")
                   for m in self.group.get_group_members())

    def all_clear(self):
        for m in self.group.get_group_members():
            self.group.registered_sync(f"{self.name}/{m}/_clear_service")

    def sample_batch(self, batch_size):
        import torch
        futures = [self.group.registered_async(f"{self.name}/{m}/_sample_service",
                                               args=(batch_size,))
                   for m in self.group.get_group_members()]
        batch = [t for f in futures for t in f.wait()][:batch_size]
        if not batch:
            return 0, None
        return len(batch), {k: torch.cat([t[k] for t in batch]) for k in batch[0]}
